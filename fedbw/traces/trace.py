"""A link-rate trace: each direction's rate over time, piecewise constant, looping.

A direction is a :class:`RateSeries`: ``(t_s, mbps)`` steps, the first at ``t_s = 0``, times strictly
increasing, rates ≥ 0 (0 = link down), and a duration past the last step. From each step on its rate
holds until the next step; the last holds until ``duration_s``, and then the series starts again from
its first step (a trace loops, as mahimahi's do). Statistics are over one period and weighted by time:
a rate held for 3 s counts three times as much as one held for 1 s.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field

#: The two directions, as the shaper names them: "up" is client → server, "down" server → client.
DIRECTIONS = ("up", "down")

Steps = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class RateSeries:
    """One direction of a trace: ``steps`` of ``(t_s, mbps)`` and the period ``duration_s``."""

    steps: Steps
    duration_s: float
    _times: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _cumulative: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        steps = tuple((float(t), float(r)) for t, r in self.steps)
        if not steps or steps[0][0] != 0.0:
            raise ValueError(f"a rate series starts with a step at t_s = 0, got {steps[:1]}")
        for (t0, _), (t1, _) in zip(steps, steps[1:]):
            if not t1 > t0:
                raise ValueError(f"step times must increase strictly, got {t1:g} after {t0:g}")
        if any(not (math.isfinite(r) and r >= 0.0) for _, r in steps):
            raise ValueError("rates must be finite and >= 0 Mbps")
        if not (math.isfinite(self.duration_s) and self.duration_s > steps[-1][0]):
            raise ValueError(f"duration_s must be finite and after the last step ({steps[-1][0]:g} s), "
                             f"got {self.duration_s:g}")
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "duration_s", float(self.duration_s))
        # megabits carried from 0 to each step's start, and to the end of the period (last entry)
        ends = [t for t, _ in steps[1:]] + [self.duration_s]
        cumulative, total = [0.0], 0.0
        for (t, rate), end in zip(steps, ends):
            total += rate * (end - t)
            cumulative.append(total)
        object.__setattr__(self, "_times", tuple(t for t, _ in steps))
        object.__setattr__(self, "_cumulative", tuple(cumulative))

    def mbps_at(self, t_s: float) -> float:
        """The rate at ``t_s`` seconds (the trace looping past its duration)."""
        if t_s < 0.0:
            raise ValueError(f"t_s must be >= 0, got {t_s:g}")
        index = bisect_right(self._times, math.fmod(t_s, self.duration_s)) - 1
        return self.steps[index][1]

    def megabits_until(self, t_s: float) -> float:
        """Megabits the link can carry from 0 to ``t_s`` (whole loops and the part of one)."""
        if t_s < 0.0:
            raise ValueError(f"t_s must be >= 0, got {t_s:g}")
        loops, rest = divmod(t_s, self.duration_s)
        index = bisect_right(self._times, rest) - 1
        start, rate = self.steps[index]
        return loops * self._cumulative[-1] + self._cumulative[index] + rate * (rest - start)

    def mean_between(self, t0_s: float, t1_s: float) -> float:
        """The time-weighted mean rate over ``[t0_s, t1_s)`` (Mbps)."""
        if not t1_s > t0_s:
            raise ValueError(f"an interval ends after it starts, got [{t0_s:g}, {t1_s:g})")
        return (self.megabits_until(t1_s) - self.megabits_until(t0_s)) / (t1_s - t0_s)

    def mean(self) -> float:
        """The time-weighted mean rate over one period (Mbps)."""
        return self._cumulative[-1] / self.duration_s

    def percentile(self, p: float) -> float:
        """The time-weighted ``p``-th percentile (0–100): the lowest rate the link is at or below for
        at least ``p`` % of the period (``percentile(10)``: 90 % of the time the link is faster)."""
        if not 0.0 <= p <= 100.0:
            raise ValueError(f"a percentile is in [0, 100], got {p:g}")
        ends = [t for t, _ in self.steps[1:]] + [self.duration_s]
        held = sorted((rate, end - t) for (t, rate), end in zip(self.steps, ends))
        wanted, covered = p / 100.0 * self.duration_s, 0.0
        for rate, dt in held:
            covered += dt
            if covered >= wanted * (1.0 - 1e-12):
                return rate
        return held[-1][0]

    def looped(self, until_s: float) -> Steps:
        """The steps repeated loop after loop until ``until_s`` (for a consumer that holds the last step
        forever, as the shaper does); equal neighbouring rates are merged."""
        out: list[tuple[float, float]] = []
        start = 0.0
        while start < until_s:
            for t, rate in self.steps:
                if start + t >= until_s:
                    break
                if not out or out[-1][1] != rate:
                    out.append((start + t, rate))
            start += self.duration_s
        return tuple(out)


@dataclass(frozen=True)
class RateTrace:
    """A link-rate trace read from a file: ``name`` (the file's stem), ``source`` (the file(s) and how
    they were read, for people), ``format`` (``"csv"`` or ``"mahimahi"``), and one :class:`RateSeries`
    per direction. Rates are as the file gives them (Mbps, 10^6 bit/s); see docs/traces.md."""

    name: str
    source: str
    format: str
    up: RateSeries
    down: RateSeries

    def series(self, direction: str) -> RateSeries:
        if direction not in DIRECTIONS:
            raise ValueError(f"direction is 'up' or 'down', got {direction!r}")
        return self.up if direction == "up" else self.down

    @property
    def duration_s(self) -> float:
        """The longer direction's period (the two differ when two mahimahi files of other lengths loop)."""
        return max(self.up.duration_s, self.down.duration_s)

    def duration(self, direction: str) -> float:
        return self.series(direction).duration_s

    def mbps_at(self, direction: str, t_s: float) -> float:
        return self.series(direction).mbps_at(t_s)

    def mean(self, direction: str) -> float:
        return self.series(direction).mean()

    def percentile(self, direction: str, p: float) -> float:
        return self.series(direction).percentile(p)

    def steps(self, direction: str, until_s: float | None = None) -> Steps:
        """``(t_s, mbps)`` steps as :class:`fedbw.shaper.link.LinkSpec`'s ``up_trace``/``down_trace`` take
        them: one period, or, with ``until_s``, the loops up to that time (the shaper holds its last
        step forever, it does not loop)."""
        series = self.series(direction)
        return series.steps if until_s is None else series.looped(until_s)
