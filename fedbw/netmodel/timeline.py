"""One federated round as a timeline: per client, per stage, with the server's barriers.

Each stage is a barrier: the server waits for every sampled client before starting the next, so
the slowest client of each stage decides it (stragglers cost everyone). Within a stage a client
downloads, computes (if the stage trains) and uploads; each one-way message costs
latency + bytes/rate on that client's link.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from fedbw.netmodel.payload import MessageSizes
from fedbw.netmodel.transfer import transfer_time_s

#: Communication above this share of the round means the workload is bandwidth-bound.
BANDWIDTH_BOUND_FRACTION = 0.30


@dataclass(frozen=True)
class ClientLink:
    """What the timeline needs to know about one client's link (payload rates)."""

    up_payload_mbps: float
    down_payload_mbps: float
    rtt_s: float

    @property
    def one_way_s(self) -> float:
        return self.rtt_s / 2.0


Exchange = MessageSizes


@dataclass(frozen=True)
class ClientStageTiming:
    client_id: int
    stage: str
    bytes_down: float
    bytes_up: float
    t_down_s: float
    t_compute_s: float
    t_up_s: float

    @property
    def t_total_s(self) -> float:
        return self.t_down_s + self.t_compute_s + self.t_up_s

    @property
    def t_comm_s(self) -> float:
        return self.t_down_s + self.t_up_s


@dataclass
class RoundTimeline:
    stages: list[str]
    timings: list[ClientStageTiming] = field(default_factory=list)

    def stage_time_s(self, stage: str) -> float:
        return max((t.t_total_s for t in self.timings if t.stage == stage), default=0.0)

    def critical(self, stage: str) -> ClientStageTiming | None:
        """The client that holds the barrier of ``stage``."""
        rows = [t for t in self.timings if t.stage == stage]
        return max(rows, key=lambda t: t.t_total_s) if rows else None

    @property
    def round_time_s(self) -> float:
        return sum(self.stage_time_s(s) for s in self.stages)

    @property
    def comm_time_s(self) -> float:
        """Communication on the critical path: the barrier-holders' download + upload time."""
        return sum(c.t_comm_s for s in self.stages if (c := self.critical(s)) is not None)

    @property
    def compute_time_s(self) -> float:
        return sum(c.t_compute_s for s in self.stages if (c := self.critical(s)) is not None)

    @property
    def comm_fraction(self) -> float:
        total = self.round_time_s
        return self.comm_time_s / total if total > 0 else 0.0

    @property
    def bandwidth_bound(self) -> bool:
        return self.comm_fraction > BANDWIDTH_BOUND_FRACTION

    def client_rows(self, client_id: int) -> list[ClientStageTiming]:
        return [t for t in self.timings if t.client_id == client_id]


def round_timeline(clients: Sequence[tuple[int, ClientLink, float]],
                   exchanges_for: Callable[[int], Sequence[MessageSizes]]) -> RoundTimeline:
    """Lay out one round.

    ``clients`` holds (client_id, link, compute_s) for each sampled client; ``exchanges_for(cid)``
    returns that client's stage messages (sizes may differ per client, e.g. measured bytes).
    """
    timeline: RoundTimeline | None = None
    for cid, link, compute_s in clients:
        exchanges = list(exchanges_for(cid))
        if timeline is None:
            timeline = RoundTimeline([e.stage for e in exchanges])
        for ex in exchanges:
            timeline.timings.append(ClientStageTiming(
                client_id=cid,
                stage=ex.stage,
                bytes_down=ex.bytes_down,
                bytes_up=ex.bytes_up,
                t_down_s=transfer_time_s(ex.bytes_down, link.down_payload_mbps, link.one_way_s),
                t_compute_s=compute_s if ex.computes else 0.0,
                t_up_s=transfer_time_s(ex.bytes_up, link.up_payload_mbps, link.one_way_s),
            ))
    return timeline if timeline is not None else RoundTimeline([])
