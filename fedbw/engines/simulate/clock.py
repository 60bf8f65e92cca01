"""simulate's virtual clock: each finished round of measured exchanges laid on the network model.

Each client's measured stage messages cross its planned link, the compute stage takes the compute
time it reported, and every stage ends at the slowest client (barrier) — the arithmetic ``estimate``
applies to predicted sizes, on what Flower really sent.
"""

from __future__ import annotations

from typing import Callable

from fedbw.engines.base import records_from_timeline
from fedbw.fl.virtual_clock import measured_timeline
from fedbw.netmodel import ClientLink, DeploymentClock
from fedbw.plan import Plan
from fedbw.results.measured_round import RoundEvents, client_extras
from fedbw.results.privacy_record import privacy_round_from_event
from fedbw.results.records import ClientRoundRecord, RoundRecord


def records_from_round_events(plan: Plan, run_id: str, engine: str, rnd: RoundEvents,
                              link_of: Callable[[int], ClientLink] | None = None,
                              clock: DeploymentClock | None = None,
                              ) -> tuple[list[ClientRoundRecord], RoundRecord]:
    """Client and round records for one finished round on the virtual network clock.

    Each client's measured stage messages cross its planned link (``link_of`` may replace it), the
    compute stage takes the compute time it reported, and every stage ends at the slowest client
    (barrier) — exactly the arithmetic ``estimate`` applies to predicted sizes. With ``clock`` (one per
    run, carried from round to round) Flower's deployment costs are laid on the same clock. The round is
    laid out by :func:`fedbw.fl.virtual_clock.measured_timeline`, which simulate's ServerApp also uses
    to leave out the updates its round policy closes the round without.
    """
    timeline = measured_timeline(plan, rnd, link_of, clock)
    clients, record = records_from_timeline(
        plan, run_id, engine, rnd.round, timeline, loss=rnd.loss, accuracy=rnd.accuracy, epsilon=rnd.epsilon,
        privacy=privacy_round_from_event(rnd.privacy), wall_time_s=rnd.wall_time_s, extra={"clock": "virtual", "bytes": "measured"})
    extras = client_extras(rnd)
    for c in clients:
        e = extras.get(c.client_id, {})
        c.train_loss, c.num_examples = e.get("train_loss"), e.get("num_examples")
    return clients, record
