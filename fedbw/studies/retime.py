"""Re-timing: what a run's rounds would have taken with every sampled client on one link profile.

Bytes and compute do not depend on the link (the virtual clock only lays them on it), so one run per
variant answers every profile: each round's measured exchanges (simulate: the event log; estimate: the
plan's predicted sizes) go through :func:`fedbw.netmodel.round_timeline` again on the profile's link —
with the server's link and Flower's deployment costs when the study's config models them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fedbw.engines.measured import RoundAssembler, read_events
from fedbw.results.measured_round import client_compute_s, measured_exchanges
from fedbw.netmodel import ClientLink, DeploymentClock, MessageSizes, round_timeline
from fedbw.netmodel.timeline import RoundTimeline
from fedbw.plan import Plan


@dataclass(frozen=True)
class RoundTraffic:
    """What one round exchanged: per sampled client, its stage messages and its compute time."""

    round: int
    clients: list[int]
    exchanges: dict[int, list[MessageSizes]]
    compute_s: dict[int, float]

    def bytes_per_client(self) -> tuple[float, float]:
        """Mean (up, down) bytes per sampled client over all stages of the round."""
        ups = [sum(m.bytes_up for m in self.exchanges[c]) for c in self.clients]
        downs = [sum(m.bytes_down for m in self.exchanges[c]) for c in self.clients]
        return sum(ups) / len(ups), sum(downs) / len(downs)


def retime(traffic: RoundTraffic, link: ClientLink, plan: Plan | None = None,
           clock: DeploymentClock | None = None) -> RoundTimeline:
    """The round's timeline with every one of its clients on ``link`` (same bytes, same compute).

    With ``plan`` the round is laid out as the plan's engines lay it: the server's shared link, each
    client's CPU, the round's SecAgg+ dropouts and, on ``clock`` (one per re-timed run, carried from round
    to round), Flower's deployment costs."""
    rows = [(cid, link, traffic.compute_s.get(cid, 0.0)) for cid in traffic.clients]
    if plan is None:
        return round_timeline(rows, lambda cid: traffic.exchanges[cid])
    opts = plan.timeline_options(traffic.round)
    if clock is None:
        opts.pop("dropped", None)
    return round_timeline(rows, lambda cid: traffic.exchanges[cid], deployment=clock, **opts)


def traffic_from_events(events: list[dict]) -> list[RoundTraffic]:
    """Finished rounds of a simulate (or emulate) event log."""
    assembler, out = RoundAssembler(), []
    for ev in events:
        rnd = assembler.add(ev)
        if rnd is None:
            continue
        exchanges, compute = measured_exchanges(rnd), client_compute_s(rnd)
        ids = [c for c in (rnd.clients or sorted(exchanges)) if c in exchanges]
        if ids:
            out.append(RoundTraffic(rnd.round, ids, exchanges, compute))
    return out


def traffic_from_run_dir(run_dir: Path) -> list[RoundTraffic]:
    from fedbw.fl.settings import EVENTS_FILE

    return traffic_from_events(read_events(Path(run_dir) / EVENTS_FILE))


def traffic_from_plan(plan: Plan, rounds: int) -> list[RoundTraffic]:
    """The estimate engine's rounds: predicted sizes and analytic compute."""
    out = []
    for r in range(1, rounds + 1):
        ids = plan.sampled_clients(r)
        ex = plan.predicted_exchanges(r)
        out.append(RoundTraffic(r, list(ids), {c: ex for c in ids}, {c: plan.clients[c].est_compute_s for c in ids}))
    return out
