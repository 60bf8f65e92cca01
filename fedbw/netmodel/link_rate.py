"""A link direction whose rate follows a trace: piecewise constant, looping, on the clock's own time.

Why its own module: a constant link is one number, and every transfer time is bytes ÷ rate; a traced link
(issue 32: a phone's uplink that moves by several times within seconds) makes a transfer's time depend on
when it starts. The clock keeps absolute time per lane (0 = the first stage's push of the run), so it can
ask a :class:`LinkRate` what the link carries from any moment on. The shaper replays the same steps
(``LinkSpec.up_trace``) from the same origin under emulate.

A :class:`LinkRate` is steps ``(t_s, bytes_per_s)`` over one period that repeats, read at the clock's
``t`` as the trace's ``t + offset_s`` (clients on one trace need not move in step). Rates are TCP payload
bytes per second, as :class:`~fedbw.netmodel.transfer.ClientLink`'s are.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LinkRate:
    """One direction's payload rate over the clock: ``steps`` of ``(t_s, bytes_per_s)`` (the first at 0,
    times increasing), looping with ``period_s``, read at clock time ``t`` as trace time ``t + offset_s``."""

    steps: tuple[tuple[float, float], ...]
    period_s: float
    offset_s: float = 0.0
    _times: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _carried: tuple[float, ...] = field(init=False, repr=False, compare=False)  #: bytes from 0 to each step

    def __post_init__(self) -> None:
        steps = tuple((float(t), float(r)) for t, r in self.steps)
        if not steps or steps[0][0] != 0.0:
            raise ValueError("a link rate's first step is at t_s = 0")
        if any(b <= a for (a, _), (b, _) in zip(steps, steps[1:])) or not self.period_s > steps[-1][0]:
            raise ValueError("step times increase strictly and end before the period")
        if any(not (math.isfinite(r) and r >= 0.0) for _, r in steps) or all(r == 0.0 for _, r in steps):
            raise ValueError("rates are finite, >= 0, and not all 0")
        ends = [t for t, _ in steps[1:]] + [self.period_s]
        carried, total = [0.0], 0.0
        for (t, r), end in zip(steps, ends):
            total += r * (end - t)
            carried.append(total)
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "_times", tuple(t for t, _ in steps))
        object.__setattr__(self, "_carried", tuple(carried))

    def _where(self, t_s: float) -> tuple[float, int, float]:
        """(whole loops before, the step index, the trace time within the period) at clock time ``t_s``."""
        loops, rest = divmod(t_s + self.offset_s, self.period_s)
        return loops, bisect_right(self._times, rest) - 1, rest

    def rate_at(self, t_s: float) -> float:
        """Bytes per second in force at clock time ``t_s``."""
        return self.steps[self._where(t_s)[1]][1]

    def next_change(self, t_s: float) -> float:
        """The clock time of the first step boundary after ``t_s`` (the period's end counts as one)."""
        loops, i, rest = self._where(t_s)
        end = self._times[i + 1] if i + 1 < len(self._times) else self.period_s
        return t_s + (end - rest)

    def carried(self, t_s: float) -> float:
        """Bytes the link carries from trace time 0 to clock time ``t_s`` (whole loops and a part)."""
        loops, i, rest = self._where(t_s)
        t, r = self.steps[i]
        return loops * self._carried[-1] + self._carried[i] + r * (rest - t)

    def time_to_carry(self, t_s: float, nbytes: float) -> float:
        """Seconds from clock time ``t_s`` until ``nbytes`` more are through (the inverse of :meth:`carried`)."""
        if nbytes <= 0.0:
            return 0.0
        target = self.carried(t_s) + nbytes
        per_loop = self._carried[-1]
        loops, within = divmod(target, per_loop)
        if within == 0.0:  # exactly a whole number of loops: the end of the last one's last rate > 0
            loops, within = loops - 1, per_loop
        # the step during which the count reaches ``within``: carried[i] < within <= carried[i + 1] (a step
        # that carries nothing never qualifies)
        i = bisect_left(self._carried, within, lo=1) - 1
        t, r = self.steps[i]
        trace_t = loops * self.period_s + t + (within - self._carried[i]) / r
        return max(0.0, trace_t - self.offset_s - t_s)
