"""The measured AllReduce: nccl-tests' sweep on real torch.distributed ranks, beside the α-β model.

:func:`measure_allreduce` runs every rank count of the sweep (ranks from :mod:`.launch`, the loop in
:mod:`.allreduce_rank`), averages each size over the ranks as nccl-tests does, puts the model's time
for the chosen fabric and the fitted model's time beside it, and says what bound the measurement.
It returns data; :mod:`fedbw.report.datacenter` prints it.
"""

from __future__ import annotations

from statistics import mean
from typing import Any, Callable

from fedbw.collectives.fit import Point, fit_alpha_beta
from fedbw.collectives.launch import Placement, run_ranks, usable_cores
from fedbw.collectives.machine import machine_info, require_gpus
from fedbw.collectives.model import allreduce_rows
from fedbw.collectives.rows import AllReduceMeasurement, AllReduceTable, MeasuredRow, Verdict
from fedbw.collectives.sizes import DTYPE_BYTES, element_count
from fedbw.errors import ConfigError

BACKENDS = ("gloo", "nccl")
#: A shaped link counts as the bound when the largest sizes reach this share of its rate.
LINK_BOUND_SHARE = 0.8
#: Buffers each rank holds per size (send, receive, expected): the memory check uses it.
BUFFERS_PER_RANK = 3


def check_request(backend: str, ranks: list[int], sizes: list[int], dtype: str, iters: int, warmup: int) -> None:
    """ConfigError for a request that cannot run here, before any process starts."""
    if backend not in BACKENDS:
        raise ConfigError(f"--backend must be gloo or nccl (got {backend!r})")
    if iters < 1 or warmup < 0:
        raise ConfigError("--iters must be ≥ 1 and --warmup-iters ≥ 0")
    if backend == "nccl":
        require_gpus(max(ranks), "fedbw allreduce with NCCL")
        return
    import psutil

    need = BUFFERS_PER_RANK * element_count(max(sizes), dtype) * DTYPE_BYTES[dtype] * max(ranks)
    have = psutil.virtual_memory().available
    if need > have // 2:
        raise ConfigError(f"{max(ranks)} ranks × {max(sizes):,} B need ≈ {need / 1e9:.1f} GB of buffers, more than "
                          f"half the {have / 1e9:.1f} GB available; lower the largest --sizes or --ranks")


def verdict(backend: str, placement: Placement, rows: list[MeasuredRow]) -> Verdict:
    """What limited the table: the GPUs' fabric (NCCL), the link (a shaped one reached), or the cores."""
    big = rows[-1]
    cores = usable_cores()
    usage = (f"ranks kept {big.cores_busy:.1f} of {cores} cores busy at {big.size_bytes:,} B, "
             f"machine {100 * big.machine_busy:.0f} % busy")
    if backend == "nccl":
        return Verdict("device", f"NCCL on local GPUs: the GPUs and their interconnect set the time ({usage})")
    if placement.link_gbps is None:
        return Verdict("cpu", f"CPU-bound: loopback gloo has no link in the path, so this measures {cores} CPU "
                              f"cores copying and adding, not a network ({usage}); read busbw as the cores' rate")
    best = max(r.ip_busbw_gbps for r in rows)
    if best >= LINK_BOUND_SHARE * placement.link_gbps:
        return Verdict("link", f"link-bound: busbw reached {100 * best / placement.link_gbps:.0f} % of the "
                               f"link's {placement.link_gbps * 8e3:.4g} Mbit/s payload rate ({usage})")
    return Verdict("cpu", f"CPU-bound: busbw stayed at {100 * best / placement.link_gbps:.0f} % of the "
                          f"link's {placement.link_gbps * 8e3:.4g} Mbit/s payload rate ({usage})")


def build_table(p: int, per_rank: list[dict[str, Any]], dtype: str, fabric: str, algorithm: str,
                node_fabric: str | None, gpus_per_node: int, backend: str, placement: Placement) -> AllReduceTable:
    """Average the ranks' rows (times: mean; #wrong: sum), fit α/β to the in-place times, add the model."""
    n_sizes = len(per_rank[0]["rows"])
    merged = []
    for i in range(n_sizes):
        rs = [r["rows"][i] for r in per_rank]
        ip_t = mean(r["ip"]["time_s"] for r in rs)
        merged.append({"size_bytes": rs[0]["size_bytes"], "count": rs[0]["count"],
                       "oop_time_s": mean(r["oop"]["time_s"] for r in rs), "ip_time_s": ip_t,
                       "oop_wrong": sum(r["wrong_oop"] for r in rs), "ip_wrong": sum(r["wrong_ip"] for r in rs),
                       "cores_busy": sum(r["ip"]["cpu_s"] for r in rs) / ip_t if ip_t > 0 else 0.0,
                       "machine_busy": mean(r["ip"]["machine_busy"] for r in rs)})
    fit = fit_alpha_beta([Point(m["size_bytes"], p, m["ip_time_s"]) for m in merged])
    model = allreduce_rows([m["size_bytes"] for m in merged], [p], fabric, algorithm, node_fabric, gpus_per_node)
    rows = [MeasuredRow(dtype=dtype, ranks=p, model_time_s=mr.time_s, fit_time_s=fit.predict_s(m["size_bytes"], p),
                        **m) for m, mr in zip(merged, model, strict=True)]
    return AllReduceTable(p, rows, fit, verdict(backend, placement, rows))


def measure_allreduce(backend: str, ranks: list[int], sizes: list[int], dtype: str = "float32", *,
                      iters: int = 20, warmup: int = 5, fabric: str = "ib-ndr400", algorithm: str = "best",
                      node_fabric: str | None = None, gpus_per_node: int = 8, placement: Placement | None = None,
                      timeout_s: float = 1800.0,
                      on_progress: Callable[[int, dict[str, Any]], None] | None = None) -> AllReduceMeasurement:
    """Measure AllReduce at each rank count over ``sizes`` (bytes) and set the model beside it."""
    check_request(backend, ranks, sizes, dtype, iters, warmup)
    allreduce_rows(sizes[:1], ranks[:1], fabric, algorithm, node_fabric, gpus_per_node)  # bad names fail now
    placement = placement or Placement()
    env = machine_info("cuda" if backend == "nccl" else "cpu")
    spec = {"backend": backend, "dtype": dtype, "sizes": sizes, "iters": iters, "warmup": warmup,
            "timeout_s": min(timeout_s, 600.0)}
    tables, wall = [], 0.0
    for p in ranks:
        done = run_ranks("allreduce", spec, p, placement=placement, timeout_s=timeout_s,
                         on_progress=(lambda msg, p=p: on_progress(p, msg)) if on_progress else None)
        wall += done.wall_s
        tables.append(build_table(p, done.results, dtype, fabric, algorithm, node_fabric, gpus_per_node, backend,
                                  placement))
    joint = (fit_alpha_beta([Point(r.size_bytes, t.ranks, r.ip_time_s) for t in tables for r in t.rows])
             if len(tables) > 1 else None)
    label = f"{node_fabric}+{fabric}" if node_fabric else fabric
    return AllReduceMeasurement(backend, dtype, placement.describe(), label, algorithm, iters, warmup, tables, joint,
                                env, wall)
