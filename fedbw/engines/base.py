"""What every engine hands back, and how records are built from a timeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from fedbw.netmodel.timeline import RoundTimeline
from fedbw.plan import Plan
from fedbw.results.records import ClientRoundRecord, RoundRecord, engine_client_records


class Progress(Protocol):
    def __call__(self, round_index: int, clients_done: int, clients_total: int) -> None: ...


@dataclass
class RunResult:
    run_dir: Path | None
    plan: Plan | None = None  #: the plan the engine ran
    clients: list[ClientRoundRecord] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    stopped_early: str | None = None  #: why the run ended before its last round, if it did


def records_from_timeline(plan: Plan, run_id: str, engine: str, round_index: int, timeline: RoundTimeline,
                          **round_fields: object) -> tuple[list[ClientRoundRecord], RoundRecord]:
    """Client and round records for one round laid out by the network model."""
    plan_clients = plan.clients
    clients = engine_client_records(run_id, engine, round_index, timeline.timings,
                                    lambda cid: plan_clients[cid].access.profile)
    if dropped := plan.dropped(round_index):  # gone mid-round: marked, and kept even with no stage timed
        for rec in clients:
            rec.dropped = rec.client_id in dropped
        timed = {rec.client_id for rec in clients}
        clients += [ClientRoundRecord(run_id, engine, round_index, cid, plan_clients[cid].access.profile, [],
                                      dropped=True) for cid in dropped if cid not in timed]
    extra = dict(round_fields.pop("extra", None) or {})  # type: ignore[arg-type]
    extra["framework"] = plan.config.framework
    if plan.online is not None and plan.round_starts_s is not None:  # clients.availability
        extra["online_clients"] = plan.online[round_index - 1]
        extra["availability_start_s"] = plan.round_starts_s[round_index - 1]
    if dropped:
        extra["dropped"] = dropped
    if plan.costs is not None:
        extra["framework_parts_s"] = timeline.framework_parts_s
    if plan.server.limits:
        extra["server_link_s"] = timeline.server_link_s
    spread = timeline.round_quantiles_s
    if spread is not None:
        round_fields.setdefault("round_interval_s", (spread[0], spread[2]))
        round_fields.setdefault("round_median_s", spread[1])
    rnd = RoundRecord(
        run_id=run_id, engine=engine, round=round_index, num_clients=len(clients),
        round_time_s=timeline.round_time_s, comm_time_s=timeline.comm_time_s,
        compute_time_s=timeline.compute_time_s, framework_time_s=timeline.framework_time_s,
        stage_times_s={s: timeline.stage_time_s(s) for s in timeline.stages},
        bytes_down_total=sum(t.bytes_down for t in timeline.timings),
        bytes_up_total=sum(t.bytes_up for t in timeline.timings),
        extra=extra, dropped_clients=len(dropped), **round_fields,  # type: ignore[arg-type]
    )
    if (late := timeline.late_clients):
        rnd.late_clients, rnd.wasted_bytes_up = late, timeline.wasted_bytes_up
        rnd.extra["waited_for_deadline_s"] = timeline.waited_for_deadline_s
    if late or dropped:
        rnd.abandoned = rnd.replies < plan.config.round.min_replies
    return clients, rnd


NoProgress: Callable[[int, int, int], None] = lambda r, d, t: None
