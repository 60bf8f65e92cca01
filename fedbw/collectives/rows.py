"""The measured AllReduce table as data: nccl-tests' columns, the model beside them, the fit, the verdict.

Plain dataclasses, no torch: :mod:`fedbw.report.datacenter` renders them and the JSON is theirs.
algbw = size / time and busbw = algbw · 2(p−1)/p, exactly as nccl-tests computes them, so a row here
and a line of ``all_reduce_perf`` read the same.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from fedbw.collectives.fit import AlphaBetaFit
from fedbw.netmodel.collectives import busbw_from_algbw


def algbw_gbps(size_bytes: float, time_s: float) -> float:
    return size_bytes / time_s / 1e9 if time_s > 0 else float("inf")


@dataclass(frozen=True)
class MeasuredRow:
    size_bytes: int
    count: int  #: elements
    dtype: str
    ranks: int
    oop_time_s: float  #: out-of-place, mean over iterations and ranks
    ip_time_s: float  #: in-place
    oop_wrong: int  #: wrong elements over all ranks
    ip_wrong: int
    cores_busy: float  #: the ranks' CPU seconds per second of in-place timing (cores they kept busy)
    machine_busy: float  #: share of the machine's CPU time not idle meanwhile (every process)
    model_time_s: float  #: the α-β model on the chosen fabric
    fit_time_s: float  #: the α-β model with α, β fitted to this table

    @property
    def oop_algbw_gbps(self) -> float:
        return algbw_gbps(self.size_bytes, self.oop_time_s)

    @property
    def oop_busbw_gbps(self) -> float:
        return busbw_from_algbw(self.oop_algbw_gbps, self.ranks)

    @property
    def ip_algbw_gbps(self) -> float:
        return algbw_gbps(self.size_bytes, self.ip_time_s)

    @property
    def ip_busbw_gbps(self) -> float:
        return busbw_from_algbw(self.ip_algbw_gbps, self.ranks)

    @property
    def fit_residual(self) -> float:
        """(fit − measured) / measured, in-place."""
        return (self.fit_time_s - self.ip_time_s) / self.ip_time_s if self.ip_time_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"oop_algbw_gbps": self.oop_algbw_gbps, "oop_busbw_gbps": self.oop_busbw_gbps,
                               "ip_algbw_gbps": self.ip_algbw_gbps, "ip_busbw_gbps": self.ip_busbw_gbps,
                               "fit_residual": self.fit_residual}


@dataclass(frozen=True)
class Verdict:
    """What limited the measurement: ``cpu`` (the cores, not a link), ``link`` or ``device`` (GPUs)."""

    bound: str
    note: str


def fit_json(fit: AlphaBetaFit | None) -> dict[str, Any] | None:
    if fit is None:
        return None
    return {"alpha_us": fit.alpha_s * 1e6, "beta_ns_per_byte": fit.beta_s_per_byte * 1e9,
            "busbw_gbps": fit.busbw_gbps, "points": fit.points, "rms_residual": fit.rms_residual,
            "max_residual": fit.max_residual, "residuals": list(fit.residuals)}


@dataclass(frozen=True)
class AllReduceTable:
    """One rank count's sweep, as one nccl-tests invocation prints it."""

    ranks: int
    rows: list[MeasuredRow]
    fit: AlphaBetaFit
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {"ranks": self.ranks, "rows": [r.to_json() for r in self.rows], "fit": fit_json(self.fit),
                "bound": self.verdict.bound, "bound_note": self.verdict.note}


@dataclass(frozen=True)
class AllReduceMeasurement:
    backend: str
    dtype: str
    placement: str
    fabric: str  #: the fabric the model column is for
    algorithm: str
    iters: int
    warmup: int
    tables: list[AllReduceTable]
    joint_fit: AlphaBetaFit | None  #: one α, β over every rank count (None with one rank count)
    environment: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"kind": "allreduce", "backend": self.backend, "dtype": self.dtype, "placement": self.placement,
                "model_fabric": self.fabric, "algorithm": self.algorithm, "iters": self.iters,
                "warmup": self.warmup, "environment": self.environment, "wall_s": self.wall_s,
                "tables": [t.to_json() for t in self.tables], "joint_fit": fit_json(self.joint_fit)}
