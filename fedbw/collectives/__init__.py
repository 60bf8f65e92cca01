"""The data-center side, measured: AllReduce and data-parallel training steps on real torch.distributed ranks.

The α-β model of AllReduce lives in :mod:`fedbw.netmodel`; this package measures what it predicts and
lays both out as nccl-tests does. Importing it costs nothing: torch is imported only by the modules
that run inside a rank and by the functions that start ranks.

* :mod:`.sizes` — ``--sizes``/``--ranks``/``--dtype`` as nccl-tests reads them (pure);
* :mod:`.model` — the model's AllReduce rows for a catalog fabric (pure);
* :mod:`.fit` — α and β fitted to a measured table, with residuals (numpy);
* :mod:`.rows` — the measured table as data (nccl-tests' columns, model, fit, what bound it);
* :mod:`.launch` — p ranks as supervised processes on a :class:`~.launch.Placement`; :mod:`.worker` is one
  rank, :mod:`.context` what a job inside it knows;
* :mod:`.allreduce` / :mod:`.allreduce_rank` — the AllReduce sweep (parent / inside a rank);
* :mod:`.step` / :mod:`.step_rank` — one DDP training step and the remedies (parent / inside a rank);
* :mod:`.exposure` — communication not hidden behind compute, from profiler intervals (pure);
* :mod:`.step_model` — the same step modelled on catalog fabrics and home uplinks (pure).
"""

from fedbw.collectives.model import AllReduceRow, allreduce_rows
from fedbw.collectives.sizes import parse_dtype, parse_ranks, parse_sizes

__all__ = ["AllReduceRow", "allreduce_rows", "parse_dtype", "parse_ranks", "parse_sizes"]
