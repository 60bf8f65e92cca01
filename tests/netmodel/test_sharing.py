"""Max-min fair sharing of the server's link, checked against cases worked out by hand."""

import math

import pytest

from fedbw.netmodel.sharing import Flow, finish_times, water_fill


def test_water_filling_gives_small_flows_their_cap_and_splits_the_rest():
    # capacity 10 over caps 1, 2, 10, 10: 1 and 2 fit under the fair share 2.5, then (10-3)/2 = 3.5 each
    assert water_fill([1, 2, 10, 10], 10) == pytest.approx([1, 2, 3.5, 3.5])
    assert water_fill([4, 4], 10) == [4, 4]  # the link is not a limit
    assert water_fill([5, 5, 5], 9) == pytest.approx([3, 3, 3])
    assert water_fill([3, 7], math.inf) == [3, 7]
    with pytest.raises(ValueError):
        water_fill([-1], 5)


def test_twenty_downloads_behind_one_gigabit():
    """20 clients × 100 MB on 300 Mbps each, behind 1 Gbps: the server link, not the clients, decides."""
    mb, gbps = 1e8, 1e9 / 8
    flows = [Flow(0.0, mb, 300e6 / 8) for _ in range(20)]
    ends = finish_times(flows, gbps)
    assert ends == pytest.approx([20 * mb / gbps] * 20)  # 16 s, not 100 MB / 300 Mbps = 2.67 s
    assert finish_times(flows[:1], gbps) == pytest.approx([mb / (300e6 / 8)])


def test_shares_change_when_a_flow_finishes_and_when_one_starts():
    # capacity 10 B/s. A: 10 B from t=0, cap 10; B: 30 B from t=0, cap 10; C: 10 B from t=4, cap 10.
    # 0–2 s: A and B at 5 B/s → A done at 2 (10 B), B has 20 left; 2–4: B alone at 10 → 0 left at 4.
    ends = finish_times([Flow(0, 10, 10), Flow(0, 30, 10), Flow(4, 10, 10)], 10)
    assert ends == pytest.approx([2.0, 4.0, 5.0])
    # a flow capped below its share leaves the rest to the other: caps 2 and 10 on 10 → 2 and 8
    ends = finish_times([Flow(0, 4, 2), Flow(0, 16, 10)], 10)
    assert ends == pytest.approx([2.0, 2.0])


def test_degenerate_flows():
    assert finish_times([Flow(3.0, 0, 5)], 10) == [3.0]  # nothing to send: done when it starts
    assert finish_times([Flow(0, 5, 0)], 10) == [math.inf]  # a link that is down never delivers
    assert finish_times([], 10) == []
    assert finish_times([Flow(1.0, 5, math.inf)], math.inf) == [1.0]  # no limit anywhere: instant
