"""A trace's numbers, weighted by time, and its steps in the shaper's form."""

from __future__ import annotations

import pytest

from fedbw.shaper.link import LinkSpec
from fedbw.traces import RateSeries, RateTrace

# up: 10 Mbps for 2 s, 20 for 1 s, 5 for 1 s (4 s in all); down: 50 for 3 s, down for 1 s
UP = RateSeries(((0.0, 10.0), (2.0, 20.0), (3.0, 5.0)), 4.0)
DOWN = RateSeries(((0.0, 50.0), (3.0, 0.0)), 4.0)
TRACE = RateTrace(name="hand", source="test", format="csv", up=UP, down=DOWN)


def test_mean_and_percentiles_are_weighted_by_time() -> None:
    assert TRACE.mean("up") == pytest.approx((10 * 2 + 20 + 5) / 4)  # 11.25, not the rows' mean 11.67
    assert TRACE.mean("down") == pytest.approx(37.5)
    # up's time below each rate: 5 Mbps 25 %, 10 Mbps 75 %, 20 Mbps 100 %
    assert TRACE.percentile("up", 10) == 5.0 and TRACE.percentile("up", 25) == 5.0
    assert TRACE.percentile("up", 50) == 10.0 and TRACE.percentile("up", 75) == 10.0
    assert TRACE.percentile("up", 90) == 20.0 and TRACE.percentile("up", 0) == 5.0
    assert TRACE.percentile("down", 10) == 0.0 and TRACE.percentile("down", 90) == 50.0
    with pytest.raises(ValueError):
        TRACE.percentile("up", 101)


def test_the_rate_at_a_time_holds_each_step_and_loops() -> None:
    assert [TRACE.mbps_at("up", t) for t in (0, 1.99, 2, 3, 3.99)] == [10, 10, 20, 5, 5]
    assert TRACE.mbps_at("up", 4.0) == 10 and TRACE.mbps_at("up", 6.5) == 20  # the second loop
    assert TRACE.mbps_at("down", 3.5) == 0.0
    assert UP.megabits_until(4.0) == pytest.approx(45.0) and UP.megabits_until(9.0) == pytest.approx(100.0)
    assert UP.mean_between(1.0, 3.0) == pytest.approx(15.0)
    with pytest.raises(ValueError):
        TRACE.mbps_at("sideways", 1.0)


def test_steps_are_what_the_shaper_takes() -> None:
    link = LinkSpec(up_mbps=TRACE.mean("up"), down_mbps=TRACE.mean("down"),
                    up_trace=TRACE.steps("up"), down_trace=TRACE.steps("down"))
    assert link.up_trace == ((0.0, 10.0), (2.0, 20.0), (3.0, 5.0)) and link.down_trace == ((0.0, 50.0), (3.0, 0.0))
    looped = TRACE.steps("down", until_s=10.0)  # the shaper holds its last step: loops laid out for it
    assert looped == ((0.0, 50.0), (3.0, 0.0), (4.0, 50.0), (7.0, 0.0), (8.0, 50.0))
    assert LinkSpec(up_mbps=1.0, down_mbps=1.0, down_trace=looped).down_trace == looped


@pytest.mark.parametrize("steps,duration", [((), 1.0), (((1.0, 5.0),), 2.0), (((0.0, 1.0), (0.0, 2.0)), 1.0),
                                            (((0.0, -1.0),), 1.0), (((0.0, 1.0), (2.0, 1.0)), 2.0)])
def test_a_series_is_checked_when_made_in_code(steps, duration) -> None:
    with pytest.raises(ValueError):
        RateSeries(steps, duration)
