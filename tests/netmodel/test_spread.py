"""A round's interval: constants drawn from their calibration intervals, quantiles over the clock's lanes."""

from __future__ import annotations

import dataclasses

import pytest

from fedbw.netmodel import ClientLink, round_timeline
from fedbw.netmodel.flower import DeploymentClock, FlowerCosts
from fedbw.netmodel.payload import round_exchanges
from fedbw.netmodel.spread import DRAWS, cost_draws, quantiles

COSTS = FlowerCosts(clientapp_start_s=1.0, local_s_per_mib=0.01, app_setup_s=2.0, request_s=0.01)
WIDE = dataclasses.replace(COSTS, intervals=(("clientapp_start_s", 0.6, 1.6), ("local_s_per_mib", 0.008, 0.02),
                                             ("request_s", 0.0, 0.05)))


def test_no_intervals_no_draws() -> None:
    assert cost_draws(COSTS) == [] and cost_draws(WIDE, draws=0) == []


def test_draws_cover_each_interval_in_strata_and_stay_in_range() -> None:
    draws = cost_draws(WIDE, draws=4, seed=3)
    assert len(draws) == 4 and draws == cost_draws(WIDE, draws=4, seed=3)  # seeded
    starts = sorted(d.clientapp_start_s for d in draws)
    assert sum(s < 1.0 for s in starts) == 2 and sum(s > 1.0 for s in starts) == 2  # one draw per quartile
    assert 0.6 < starts[0] and starts[-1] < 1.6  # the 12.5th/87.5th percentiles lie inside the 5–95 % interval
    assert all(d.request_s >= 0.0 for d in draws)  # an interval reaching 0 never draws below it
    assert all(d.app_setup_s == 2.0 for d in draws)  # a constant without an interval is not drawn


def test_quantiles_of_lanes() -> None:
    assert quantiles([3.0, 1.0, 2.0, 4.0], (0.5,)) == (2.5,)
    lanes = [float(q) for q in range(8)]  # lanes at the quantiles (q + 1/2)/8 give those quantiles back
    assert quantiles(lanes, (0.0625, 0.9375)) == (0.0, 7.0)
    assert quantiles([5.0], (0.1, 0.9)) == (5.0, 5.0)
    with pytest.raises(ValueError):
        quantiles([], (0.5,))


def _round(costs: FlowerCosts, rounds: int = 3):
    link = ClientLink(up_payload_mbps=30.0, down_payload_mbps=300.0, rtt_s=0.025)
    clock = DeploymentClock(costs, "averaged")
    clients = [(cid, link, 2.0) for cid in range(4)]
    return [round_timeline(clients, round_exchanges(11_000_000, 60, r), deployment=clock) for r in range(1, rounds + 1)]


def test_the_spread_lanes_widen_the_interval_and_leave_the_expected_round_alone() -> None:
    plain, wide = _round(COSTS), _round(WIDE)
    for a, b in zip(plain, wide):
        assert b.round_time_s == pytest.approx(a.round_time_s)  # the mean is the central lanes', as before
        assert len(a.lane_round_s) == 8 and len(b.lane_round_s) == 8 * (1 + DRAWS)
        lo_a, mid_a, hi_a = a.round_quantiles_s
        lo_b, mid_b, hi_b = b.round_quantiles_s
        assert lo_a <= mid_a <= hi_a and lo_b <= mid_b <= hi_b
        assert hi_b - lo_b > hi_a - lo_a  # the constants' uncertainty adds to the phases'


def test_a_links_only_round_has_no_interval() -> None:
    link = ClientLink(up_payload_mbps=30.0, down_payload_mbps=300.0, rtt_s=0.025)
    tl = round_timeline([(0, link, 1.0)], round_exchanges(1_000_000, 4, 1))
    assert tl.round_quantiles_s is None
