"""Deadline token bucket over a piecewise-constant rate, with an injectable clock.

Why a deadline bucket: pacing with ``sleep(n / rate)`` loses every timer overshoot (asyncio sleeps
land 0.2–1 ms late), which measured 71–91 % of the target rate here. Instead the bucket keeps
``t_free``, the clock time at which everything booked so far has been serialized. Booking ``n`` bytes
moves ``t_free`` forward by exactly ``n / rate``; the caller waits until that time and sends. A late
wake-up does not move ``t_free``, so the next booking is due sooner: timer error is carried forward
and the long-run rate is exact.

Rates are bytes per second here (callers convert from Mbps). A rate may change over time
(:class:`RateSchedule`), 0 means the link is down, ``inf`` means unshaped.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Sequence

Clock = Callable[[], float]

#: How far behind the ideal schedule a continuously busy bucket may fall and still catch up.
#: Catching up keeps the long-run rate exact after ordinary timer lateness (≤ a few ms); after a
#: stall longer than this (process stopped, machine frozen) the link does not flood out the backlog.
DEFAULT_MAX_LAG_S = 1.0


class RateSchedule:
    """A byte rate that is ``base`` until the first step, then each step's rate from its time on.

    Times are on the same clock as the bucket's (absolute, e.g. ``time.perf_counter()``).
    """

    __slots__ = ("_times", "_rates")

    def __init__(self, base_bytes_per_s: float, steps: Sequence[tuple[float, float]] = ()) -> None:
        times = [-math.inf]
        rates = [float(base_bytes_per_s)]
        for t_s, rate in steps:
            if t_s <= times[-1]:
                raise ValueError("rate schedule steps must have strictly increasing times")
            times.append(float(t_s))
            rates.append(float(rate))
        if any(r < 0 or math.isnan(r) for r in rates):
            raise ValueError("rates must be >= 0")
        self._times = times
        self._rates = rates

    @property
    def constant(self) -> bool:
        """True when the rate never changes (no steps)."""
        return len(self._rates) == 1

    def rate_at(self, t_s: float) -> float:
        """Byte rate in force at ``t_s``."""
        return self._rates[bisect.bisect_right(self._times, t_s) - 1]

    def advance(self, t_s: float, n_bytes: float) -> float:
        """Earliest time ≥ ``t_s`` by which the link has carried ``n_bytes`` starting at ``t_s``.

        Returns ``inf`` if the link goes down for good before the bytes are through.
        """
        if n_bytes <= 0:
            return t_s
        times, rates = self._times, self._rates
        i = bisect.bisect_right(times, t_s) - 1
        last = len(times) - 1
        remaining = float(n_bytes)
        while True:
            rate = rates[i]
            seg_end = times[i + 1] if i < last else math.inf
            if rate > 0.0:
                if rate == math.inf:
                    return t_s
                t_done = t_s + remaining / rate
                if t_done <= seg_end:
                    return t_done
                remaining -= (seg_end - t_s) * rate
            elif seg_end == math.inf:
                return math.inf
            t_s = seg_end
            i += 1

    def rewind(self, t_s: float, n_bytes: float) -> float:
        """Latest time ≤ ``t_s`` such that the link carries ``n_bytes`` during [that time, ``t_s``]."""
        if n_bytes <= 0:
            return t_s
        times, rates = self._times, self._rates
        i = bisect.bisect_right(times, t_s) - 1
        remaining = float(n_bytes)
        while True:
            rate = rates[i]
            seg_start = times[i]
            if rate > 0.0:
                if rate == math.inf:
                    return t_s
                t_begin = t_s - remaining / rate
                if t_begin >= seg_start:
                    return t_begin
                remaining -= (t_s - seg_start) * rate
            elif seg_start == -math.inf:
                return -math.inf
            t_s = seg_start
            i -= 1


class TokenBucket:
    """Books bytes on one link direction; returns when each booking has been serialized.

    The bucket starts empty: the first ``n`` bytes are due ``n / rate`` after creation, never at once.
    After an idle period it holds at most ``burst_bytes`` of credit; pass ``continuing=True`` while the
    link stayed busy since the previous booking, so that a late wake-up is caught up instead of being
    mistaken for idleness (up to ``max_lag_s`` behind).
    """

    __slots__ = ("_schedule", "_clock", "_t_free", "burst_bytes", "max_lag_s")

    def __init__(
        self,
        rate: RateSchedule | float,
        *,
        burst_bytes: float = 0.0,
        clock: Clock = time.perf_counter,
        start_s: float | None = None,
        max_lag_s: float = DEFAULT_MAX_LAG_S,
    ) -> None:
        if burst_bytes < 0 or math.isnan(burst_bytes):
            raise ValueError("burst_bytes must be >= 0")
        self._schedule = rate if isinstance(rate, RateSchedule) else RateSchedule(rate)
        self._clock = clock
        self._t_free = clock() if start_s is None else float(start_s)
        self.burst_bytes = float(burst_bytes)
        self.max_lag_s = float(max_lag_s)

    @property
    def schedule(self) -> RateSchedule:
        return self._schedule

    def reschedule(self, schedule: RateSchedule) -> None:
        """Follow ``schedule`` from now on (a trace anchored again); bytes already booked keep their times."""
        self._schedule = schedule

    @property
    def t_free(self) -> float:
        """Clock time at which every byte booked so far has been serialized."""
        return self._t_free

    def hold(self, t_s: float) -> None:
        """Nothing more is serialized before ``t_s`` (a booking that also waited for a shared link)."""
        if t_s > self._t_free:
            self._t_free = t_s

    def reserve(self, n_bytes: float, *, continuing: bool = False, demand_s: float | None = None) -> float:
        """Book ``n_bytes``; return the clock time at which they are through the link.

        ``continuing``: bytes have been waiting since the previous booking finished (the link never
        idled), so the booking follows on from ``t_free`` even if the caller is late. Otherwise the
        link idled until ``demand_s`` (default: now), when the bytes showed up; credit saved while idle
        is capped at ``burst_bytes``. The caller sends the bytes at (not before) the returned time;
        ``inf`` means the link is down for good and they will never be through.
        """
        now = self._clock()
        if continuing:
            floor = now - self.max_lag_s
        else:
            floor = now if demand_s is None or demand_s > now else demand_s
            if self.burst_bytes > 0.0:
                floor = self._schedule.rewind(floor, self.burst_bytes)
        if floor > self._t_free:
            self._t_free = floor
        self._t_free = self._schedule.advance(self._t_free, n_bytes)
        return self._t_free
