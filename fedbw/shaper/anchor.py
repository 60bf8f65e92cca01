"""Traced links anchored at the first round's start, from the process that knows when that is.

Why: a link-rate trace's t = 0 is the first round's start in every engine (the network model's clock
starts there), but under emulate the shaper starts well before it (the SuperLink, every SuperNode and
the ServerApp start first, seconds that vary from run to run). So the shaper starts its traces again
when asked: SIGUSR1 makes every traced link follow its trace from that moment (:meth:`Shaper.anchor_traces`).
Emulate writes the shapers' PIDs into a file named by :data:`ANCHOR_ENV` in the Flower processes'
environment and signals them itself when it submits the run; fedbw's strategy signals them again as its first
round starts (``configure_fit`` of round 1, where the round's clock starts: the model's t = 0); an app of
your own gets the submit's anchor, seconds early.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
from pathlib import Path

#: The environment variable naming the file of shaper PIDs (one per line).
ANCHOR_ENV = "FEDBW_TRACE_ANCHOR_PIDS"
#: The signal a shaper process anchors its traces on.
ANCHOR_SIGNAL = signal.SIGUSR1


def write_anchor_pids(path: str | os.PathLike[str], pids: Iterable[int]) -> None:
    Path(path).write_text("".join(f"{pid}\n" for pid in pids), encoding="utf-8")


def anchor_traces_now(path: str | os.PathLike[str] | None = None) -> int:
    """Signal every shaper listed in ``path`` (default: the file :data:`ANCHOR_ENV` names) to start its
    traces now; returns how many were signalled (0 when there is no file: not under emulate)."""
    path = path or os.environ.get(ANCHOR_ENV)
    if not path:
        return 0
    try:
        pids = [int(line) for line in Path(path).read_text(encoding="utf-8").split()]
    except (OSError, ValueError):
        return 0
    sent = 0
    for pid in pids:
        try:
            os.kill(pid, ANCHOR_SIGNAL)
            sent += 1
        except ProcessLookupError:  # that shaper has ended: nothing to anchor
            pass
    return sent
