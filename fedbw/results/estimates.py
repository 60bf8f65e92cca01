"""Answers without a run, as the report renders them: a round per uplink profile, an AllReduce per fabric
(``fedbw estimate``), and a one-parameter analytic sweep's points (``fedbw sweep --param``). The estimate
engine and :mod:`fedbw.compare` build them; the report reads them (so they live below both)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from fedbw.config import ExperimentConfig


@dataclass(frozen=True)
class ProfileEstimate:
    """One steady-state round with every sampled client on ``profile``."""

    profile: str
    up_mbps: float
    down_mbps: float
    bytes_up_per_client: float
    bytes_down_per_client: float
    t_down_s: float
    t_compute_s: float
    t_up_s: float
    t_framework_s: float  #: the round's Flower and server time (polls, process start, aggregation)
    round_time_s: float
    comm_fraction: float
    bandwidth_bound: bool
    #: the round's central 80 % interval over Flower's unknown phases and the constants' intervals (None: the
    #: model has no spread there, e.g. links only)
    round_interval_s: tuple[float, float] | None = None


@dataclass(frozen=True)
class FabricEstimate:
    fabric: str
    description: str
    ranks: int
    size_bytes: float
    algorithm: str
    time_s: float
    algbw_gbps: float
    busbw_gbps: float


@dataclass
class EstimateReport:
    config: ExperimentConfig
    model: str
    params: int
    clients_per_round: int
    round_index: int
    profiles: list[ProfileEstimate]
    fabrics: list[FabricEstimate]

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "params": self.params, "clients_per_round": self.clients_per_round,
                "round": self.round_index, "secagg": self.secagg_label, "codec": self.config.compression.codec,
                "profiles": [asdict(p) for p in self.profiles],
                "fabrics": [asdict(f) | {"fl_round_over_allreduce": self.ratio(f)} for f in self.fabrics]}

    @property
    def secagg_label(self) -> str:
        sa = self.config.privacy.secagg
        return sa.mode if sa.enabled else "off"

    def ratio(self, f: FabricEstimate) -> float | None:
        """Slowest profile's round time over this fabric's AllReduce time."""
        if not self.profiles or f.time_s <= 0:
            return None
        return max(p.round_time_s for p in self.profiles) / f.time_s


@dataclass(frozen=True)
class SweepPoint:
    value: Any
    round_time_s: float
    comm_time_s: float
    comm_fraction: float
    bandwidth_bound: bool
    bytes_up_per_client: float
    bytes_down_per_client: float
    #: what a real deployment would lose at this value before timing matters: replies Flower's object-push
    #: session drops (fedbw.flower_limits; one sentence per stage); the round time then describes a round
    #: Flower never finishes
    lost_replies: list[str] = field(default_factory=list)
