"""Communication hidden behind compute, and communication left exposed, from profiler intervals.

A DDP step overlaps gradient AllReduce with the rest of the backward pass. What costs time is only the
communication no compute runs beside: exposed = |comm ∪ … minus compute ∪ …|, both clipped to the
step. Intervals are (start, end) pairs in any one unit; pure functions, so the arithmetic is tested
without torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

Interval = tuple[float, float]


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint intervals covering the same points; empty and reversed ones dropped."""
    merged: list[list[float]] = []
    for start, end in sorted((a, b) for a, b in intervals if b > a):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def length(intervals: Iterable[Interval]) -> float:
    return sum(b - a for a, b in union(intervals))


def clip(intervals: Iterable[Interval], window: Interval) -> list[Interval]:
    lo, hi = window
    return [(max(a, lo), min(b, hi)) for a, b in intervals if min(b, hi) > max(a, lo)]


def minus(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """The parts of ``a`` not covered by ``b``."""
    out: list[Interval] = []
    cover = union(b)
    for start, end in union(a):
        cur = start
        for bs, be in cover:
            if be <= cur or bs >= end:
                continue
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
            if cur >= end:
                break
        if cur < end:
            out.append((cur, end))
    return out


@dataclass(frozen=True)
class StepBreakdown:
    step_s: float
    compute_s: float  #: time some compute ran
    comm_s: float  #: time some AllReduce was in flight
    exposed_s: float  #: AllReduce time with no compute beside it

    @property
    def overlapped_s(self) -> float:
        return self.comm_s - self.exposed_s

    @property
    def exposed_share(self) -> float:
        return self.exposed_s / self.step_s if self.step_s > 0 else 0.0


def breakdown(window: Interval, compute: Sequence[Interval], comm: Sequence[Interval],
              scale: float = 1.0) -> StepBreakdown:
    """Compute, communication and exposed communication inside one step's ``window`` (× ``scale`` → s)."""
    c, m = clip(compute, window), clip(comm, window)
    return StepBreakdown((window[1] - window[0]) * scale, length(c) * scale, length(m) * scale,
                         length(minus(m, c)) * scale)
