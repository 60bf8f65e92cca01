"""A measured round laid on the network model's clock: simulate's virtual time, shared by its two sides.

simulate's engine lays every finished round of the apps' event log on this clock to write its records
(:mod:`fedbw.engines.simulate.clock`); with a round policy (``[round]``: a deadline, over-selection) simulate's
ServerApp lays the round it is in on its own copy of the same clock before it aggregates, so the updates it
leaves out are exactly the clients the records call late. Both build the round here, from the same messages.
No Flower and no torch: the ServerApp imports it, and so does the engine.
"""

from __future__ import annotations

from typing import Any, Callable

from fedbw.netmodel import ClientLink, DeploymentClock, round_timeline
from fedbw.netmodel.timeline import RoundTimeline
from fedbw.plan import Plan
from fedbw.results.measured_round import RoundEvents, client_compute_s, measured_exchanges


def measured_timeline(plan: Plan, rnd: RoundEvents, link_of: Callable[[int], ClientLink] | None = None,
                      clock: DeploymentClock | None = None) -> RoundTimeline:
    """One measured round on the clock: each client's measured stage messages cross its planned link
    (``link_of`` may replace it), the training stage takes the compute time it reported, Flower's costs and
    the plan's round policy apply (``clock``: one per run, carried from round to round). A client the plan
    has dropping mid-round (``clients.availability``) ran to the end under Flower's Simulation Engine; on the
    clock its messages end before the stage it misses, which waits for Flower to report it gone, as in
    estimate."""
    exchanges = measured_exchanges(rnd)
    compute = client_compute_s(rnd)
    ids = [c for c in (rnd.clients or sorted(exchanges)) if c in exchanges]
    rows = [(cid, link_of(cid) if link_of else plan.clients[cid].link, compute.get(cid, 0.0)) for cid in ids]
    opts = plan.timeline_options(rnd.round)
    if clock is None:
        opts.pop("dropped", None)  # what a dropout costs is Flower's wait: links alone have none
    if (gone := opts.get("dropped")) is not None:
        return round_timeline(rows, lambda cid: gone.messages(cid, exchanges[cid]), deployment=clock, **opts)
    return round_timeline(rows, lambda cid: exchanges[cid], deployment=clock, **opts)


class VirtualClose:
    """simulate's ServerApp's view of its round policy: which replies the virtual clock says missed the
    close. Every round goes through it (the clock carries the SuperNodes' poll grids to the next round)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.clock = plan.deployment_clock()

    def late(self, round_index: int, clients: list[int], messages: list[dict[str, Any]]) -> set[int]:
        """The clients of ``messages`` (the round's "message" events, as logged) whose reply came too late."""
        timeline = measured_timeline(self.plan, RoundEvents(round_index, list(clients), list(messages)),
                                     clock=self.clock)
        return timeline.late_ids
