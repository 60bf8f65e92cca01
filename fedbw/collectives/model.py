"""AllReduce as the α-β model predicts it, one row per (ranks, size) as nccl-tests prints them.

The model itself lives in :mod:`fedbw.netmodel.collectives`; this module picks the fabric from the
catalog (flat, or NVLink inside nodes and a network between them) and lays the answer out in rows
that the measured table can stand beside.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbw.errors import ConfigError


@dataclass(frozen=True)
class AllReduceRow:
    fabric: str
    size_bytes: float
    ranks: int
    algorithm: str
    time_s: float
    algbw_gbps: float
    busbw_gbps: float


def allreduce_rows(sizes: list[int], ranks: list[int], fabric: str, algorithm: str = "best",
                   node_fabric: str | None = None, gpus_per_node: int = 8) -> list[AllReduceRow]:
    """The α-β model of AllReduce, one row per (ranks, size) as nccl-tests prints them.

    With ``node_fabric`` the ranks are nodes × ``gpus_per_node``: NVLink inside each node,
    ``fabric`` between nodes (hierarchical, as NCCL does); rank counts below one node stay on
    ``node_fabric``.
    """
    from fedbw import catalog
    from fedbw.netmodel import allreduce, best_allreduce, hierarchical_allreduce
    from fedbw.netmodel.collectives import ALGORITHMS

    if algorithm != "best" and algorithm not in ALGORITHMS:
        raise ConfigError(f"--algorithm must be best or one of {', '.join(ALGORITHMS)} (got {algorithm!r})")
    if gpus_per_node < 1:
        raise ConfigError(f"--gpus-per-node must be ≥ 1 (got {gpus_per_node})")
    f = catalog.get_fabric(fabric)
    nf = catalog.get_fabric(node_fabric) if node_fabric else None
    rows = []
    for p in ranks:
        for n in sizes:
            if nf is not None and p > gpus_per_node:
                if p % gpus_per_node:
                    raise ConfigError(f"{p} ranks is not a whole number of {gpus_per_node}-GPU nodes")
                e = hierarchical_allreduce(n, p // gpus_per_node, gpus_per_node, nf.busbw_gbps, nf.alpha_us * 1e-6,
                                           f.busbw_gbps, f.alpha_us * 1e-6)
                name = f"{nf.name}+{f.name}"
            else:
                g = nf or f
                e = (best_allreduce(n, p, g.busbw_gbps, g.alpha_us * 1e-6) if algorithm == "best"
                     else allreduce(n, p, g.busbw_gbps, g.alpha_us * 1e-6, algorithm))
                name = g.name
            rows.append(AllReduceRow(name, n, p, e.algorithm, e.time_s, e.algbw_gbps, e.busbw_gbps))
    return rows
