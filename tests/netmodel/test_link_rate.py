"""A traced link in the model (issue 32.5): a transfer across a rate step against hand arithmetic, alone
(LinkRate), sharing the server's link (finish_times) and as Flower's objects (one object, no round trip)."""

from __future__ import annotations

import math

import pytest

from fedbw.netmodel.link_rate import LinkRate
from fedbw.netmodel.objects import transfer_objects_s
from fedbw.netmodel.sharing import Flow, finish_times

MB = 1e6
#: 10 MB/s for 20 s, then 2 MB/s for 10 s, looping every 30 s
STEP = LinkRate(((0.0, 10 * MB), (20.0, 2 * MB)), 30.0)


def test_a_transfer_across_a_step_is_hand_arithmetic() -> None:
    # 150 MB from t = 10: 100 MB by t = 20, then 50 MB at 2 MB/s: 25 s more, past the loop's end at 30 s
    # (20 MB by 30 s), the rest (30 MB) at 10 MB/s from 30 s: done at 33 s → 23 s
    assert STEP.time_to_carry(10.0, 150 * MB) == pytest.approx(23.0, rel=1e-12)
    assert STEP.time_to_carry(0.0, 220 * MB) == pytest.approx(30.0, rel=1e-12)  # a whole loop, exactly
    assert STEP.carried(45.0) == pytest.approx(220 * MB + 150 * MB)
    assert STEP.rate_at(25.0) == 2 * MB and STEP.next_change(25.0) == 30.0 and STEP.next_change(31.0) == 50.0


def test_an_offset_reads_the_trace_further_on() -> None:
    late = LinkRate(STEP.steps, STEP.period_s, offset_s=15.0)
    assert late.rate_at(0.0) == 10 * MB and late.rate_at(5.0) == 2 * MB
    assert late.time_to_carry(0.0, 70 * MB) == pytest.approx(5.0 + 10.0)  # 50 MB by 5 s, 20 MB at 2 MB/s


def test_a_link_that_is_down_for_a_while_carries_after_it() -> None:
    flap = LinkRate(((0.0, 5 * MB), (2.0, 0.0), (6.0, 5 * MB)), 10.0)
    assert flap.time_to_carry(1.0, 10 * MB) == pytest.approx(1.0 + 4.0 + 1.0)  # 5 MB, the gap, 5 MB


def test_sharing_the_server_link_follows_each_flows_trace() -> None:
    # two flows from 0 s sharing 12 MB/s: one traced (10 MB/s, 2 MB/s from 20 s, 10 again from 30 s), one
    # capped at 10 MB/s. 0–20 s: 6 MB/s each (120 MB each). 20–25 s: the traced one 2 MB/s, the other 10
    # (its last 50 MB: done at 25 s). 25–30 s: the traced one alone at 2 MB/s (140 MB by 30 s); from 30 s at
    # 10 MB/s its last 20 MB take 2 s: done at 32 s.
    flows = [Flow(0.0, 160 * MB, math.inf, STEP), Flow(0.0, 170 * MB, 10 * MB)]
    traced, capped = finish_times(flows, 12 * MB)
    assert capped == pytest.approx(25.0)
    assert traced == pytest.approx(32.0)


def test_one_big_object_on_a_traced_link_is_hand_arithmetic() -> None:
    # no round trip, no CPU: the objects take the bytes' time on the trace, from the clock time they start
    t = transfer_objects_s(150 * MB, 1, math.nan, 0.0, 2, 0.0, 0.0, rate=STEP, t0_s=10.0)
    assert t == pytest.approx(23.0, rel=1e-9)
    const = transfer_objects_s(150 * MB, 1, 10 * MB, 0.0, 2, 0.0, 0.0)
    assert const == pytest.approx(15.0)


def test_a_rate_refuses_what_cannot_be_a_trace() -> None:
    for steps, period in ((((1.0, 1.0),), 2.0), (((0.0, 1.0), (0.0, 2.0)), 2.0), (((0.0, 0.0),), 1.0),
                          (((0.0, 1.0),), 0.0)):
        with pytest.raises(ValueError):
            LinkRate(steps, period)
