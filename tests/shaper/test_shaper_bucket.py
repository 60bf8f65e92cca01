"""Token bucket and rate schedule, on a fake clock: exact arithmetic, no sockets."""

from __future__ import annotations

import math

import pytest

from fedbw.shaper.bucket import RateSchedule, TokenBucket


class FakeClock:
    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


RATE = 1_000_000.0  # bytes/s: 1000 B take exactly 1 ms


def test_starts_empty_first_bytes_pay_full_serialization():
    clock = FakeClock(5.0)
    bucket = TokenBucket(RATE, clock=clock)
    assert bucket.reserve(1_000_000) == pytest.approx(6.0)


def test_exact_pacing_back_to_back():
    clock = FakeClock()
    bucket = TokenBucket(RATE, clock=clock)
    t_end = 0.0
    for _ in range(1000):
        t_end = bucket.reserve(1000, continuing=True)
        clock.t = t_end  # a perfect timer
    assert t_end == pytest.approx(1.0, abs=1e-9)


def test_timer_overshoot_is_carried_forward():
    """A sender that wakes 0.3 ms late every time still gets exactly the link rate."""
    clock = FakeClock()
    bucket = TokenBucket(RATE, clock=clock)
    t_end = 0.0
    for _ in range(1000):
        t_end = bucket.reserve(1000, continuing=True)
        clock.t = max(clock.t, t_end) + 0.0003  # overslept
    # 1 MB booked by 1.0 s, not 1.3 s as sleep(n / rate) pacing would give.
    assert t_end == pytest.approx(1.0, abs=1e-9)
    assert clock.t == pytest.approx(1.0003, abs=1e-9)


def test_idle_link_without_burst_does_not_bank_credit():
    clock = FakeClock()
    bucket = TokenBucket(RATE, clock=clock)
    clock.t = 10.0
    assert bucket.reserve(5000) == pytest.approx(10.005)


def test_burst_size_caps_idle_credit():
    clock = FakeClock()
    bucket = TokenBucket(RATE, burst_bytes=5000, clock=clock)
    clock.t = 0.002  # only 2000 B of credit so far: the bucket started empty
    assert bucket.reserve(2000) == pytest.approx(0.002)
    clock.t = 100.0  # long idle: credit is capped at the burst size
    assert bucket.reserve(5000) == pytest.approx(100.0)
    assert bucket.reserve(1000, continuing=True) == pytest.approx(100.001)
    clock.t = 200.0
    assert bucket.reserve(20_000) == pytest.approx(200.015)


def test_continuing_catch_up_is_bounded_by_max_lag():
    clock = FakeClock()
    bucket = TokenBucket(RATE, clock=clock, max_lag_s=0.5)
    bucket.reserve(1000)
    clock.t = 5.0  # the process stalled for 5 s while "busy"
    assert bucket.reserve(1000, continuing=True) == pytest.approx(4.501)


def test_schedule_advance_across_down_period():
    # 1 MB/s until 1 s, down until 2 s, then 2 MB/s.
    sched = RateSchedule(1e6, [(1.0, 0.0), (2.0, 2e6)])
    assert sched.rate_at(0.5) == 1e6
    assert sched.rate_at(1.5) == 0.0
    assert sched.rate_at(2.0) == 2e6
    assert sched.advance(0.5, 1e6) == pytest.approx(2.25)  # 0.5 MB by 1 s, rest at 2 MB/s from 2 s
    assert sched.advance(1.2, 1e6) == pytest.approx(2.5)
    assert sched.rewind(2.25, 1e6) == pytest.approx(0.5)
    assert sched.advance(3.0, 0) == 3.0


def test_schedule_down_for_good_and_unshaped():
    down = RateSchedule(1e6, [(1.0, 0.0)])
    assert down.advance(0.5, 1e6) == math.inf
    assert RateSchedule(math.inf).advance(3.0, 1e9) == 3.0
    assert RateSchedule(1e6, [(1.0, math.inf)]).advance(0.5, 1e6) == pytest.approx(1.0)


def test_bucket_follows_trace():
    clock = FakeClock()
    bucket = TokenBucket(RateSchedule(1e6, [(1.0, 0.0), (2.0, 1e6)]), clock=clock)
    assert bucket.reserve(500_000) == pytest.approx(0.5)
    assert bucket.reserve(1_000_000, continuing=True) == pytest.approx(2.5)


def test_schedule_rejects_bad_steps():
    with pytest.raises(ValueError):
        RateSchedule(1e6, [(1.0, 1e6), (1.0, 2e6)])
    with pytest.raises(ValueError):
        RateSchedule(-1.0)
    with pytest.raises(ValueError):
        TokenBucket(1e6, burst_bytes=-1)
