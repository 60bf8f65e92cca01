"""A measured round laid on the network model's clock: simulate's virtual time, shared by its two sides.

simulate's engine lays every finished round of the apps' event log on this clock to write its records
(:mod:`fedbw.engines.simulate.clock`); with a round policy (``[round]``: a deadline, over-selection) simulate's
ServerApp lays the round it is in on its own copy of the same clock before it aggregates, so the updates it
leaves out are exactly the clients the records call late. Both build the round here, from the same messages.
No Flower and no torch: the ServerApp imports it, and so does the engine.
"""

from __future__ import annotations

import copy
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
    close. Every round goes through it (the clock carries the SuperNodes' poll grids to the next round). A
    round's stages after its training stage (SecAgg+'s unmask) are not run yet when it asks, so the round
    so far is laid on a copy of the clock, and the whole round, once the next one asks, on the clock."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.clock = plan.deployment_clock()
        #: the round being asked about: its index, clients and the caller's list of its events, which grows
        #: with its later stages
        self._open: tuple[int, list[int], list[dict[str, Any]]] | None = None

    def late(self, round_index: int, clients: list[int], messages: list[dict[str, Any]]) -> set[int]:
        """The clients of ``messages`` (the round's "message" events so far, as logged, every stage; the caller
        goes on adding the round's later ones to this list) whose training reply came too late."""
        if self._open is not None and self._open[0] != round_index:
            done, ids, events = self._open
            measured_timeline(self.plan, RoundEvents(done, ids, list(events)), clock=self.clock)
        self._open = (round_index, list(clients), messages)
        clock = copy.deepcopy(self.clock) if self.clock is not None else None
        return measured_timeline(self.plan, RoundEvents(round_index, list(clients), list(messages)),
                                 clock=clock).late_ids
