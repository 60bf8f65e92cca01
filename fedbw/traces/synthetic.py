"""Synthetic link-rate traces with a measured trace's statistics: what fedbw can ship where the measured
trace cannot be shipped.

Why: the cellular traces people use (mahimahi's, recorded with Saturator for Winstein et al., NSDI 2013)
are GPL-3 and cannot sit next to fedbw's Apache-2.0 code, yet a user should not need them to try a
mobile uplink that moves. A few numbers of such a trace are facts about it, not a copy of it: its mean,
how far its rate spreads, how long a rate persists, and how often the link is out. A process with those
numbers is a fair stand-in for a bandwidth study, and it is generated here, from a seed, in the open.

The shape of one direction (:class:`RateShape`), over steps of ``step_s``:

- **outages**: a step whose rate is below ``OUTAGE_SHARE_OF_MEAN`` of the mean is the link out (rate
  0); their share of the steps and their mean length in steps (a two-state on/off chain);
- **the rate when up**: the log of the rate is a Gaussian AR(1) — lag-1 autocorrelation ``ac1``, standard
  deviation ``log_sd`` — so the rate is log-normal and persists for about 1 / (1 − ac1) steps;
- **the mean**: the generated series is scaled so its time-weighted mean is exactly ``mean_mbps``.

:func:`fit_shape` measures a shape from any :class:`RateSeries` (a CSV or mahimahi file read by
:func:`fedbw.traces.load_trace`); :func:`generate` draws a series from a shape and a seed. Percentiles
and the lag-1 persistence of a draw come out near the source's, not equal (tests/traces check how near).
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import asdict, dataclass

from fedbw.traces.trace import RateSeries, RateTrace

#: A step slower than this share of the direction's mean counts as the link out (mahimahi's traces have
#: seconds with a handful of packets where the radio lost the cell: 1–11 % of seconds up).
OUTAGE_SHARE_OF_MEAN = 0.05
#: The steps a shape is measured on and a series is drawn in (seconds).
DEFAULT_STEP_S = 1.0


@dataclass(frozen=True)
class RateShape:
    """One direction's statistics over steps of ``step_s`` seconds (see the module's docstring)."""

    mean_mbps: float
    log_sd: float
    ac1: float
    outage_share: float
    outage_mean_steps: float
    step_s: float = DEFAULT_STEP_S

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean_mbps) and self.mean_mbps > 0):
            raise ValueError(f"mean_mbps must be > 0, got {self.mean_mbps!r}")
        if not (math.isfinite(self.log_sd) and self.log_sd >= 0):
            raise ValueError(f"log_sd must be >= 0, got {self.log_sd!r}")
        if not -1.0 < self.ac1 < 1.0:
            raise ValueError(f"ac1 is a correlation in (-1, 1), got {self.ac1!r}")
        if not 0.0 <= self.outage_share < 1.0:
            raise ValueError(f"outage_share must be in [0, 1), got {self.outage_share!r}")
        if not self.outage_mean_steps >= 1.0:
            raise ValueError(f"outage_mean_steps must be >= 1 (an outage lasts a step at least), "
                             f"got {self.outage_mean_steps!r}")
        if not (math.isfinite(self.step_s) and self.step_s > 0):
            raise ValueError(f"step_s must be > 0, got {self.step_s!r}")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def _steps_of(series: RateSeries, step_s: float) -> list[float]:
    """The series' mean rate in each whole step of one period (at least two steps)."""
    n = int(series.duration_s // step_s)
    if n < 2:
        raise ValueError(f"a shape needs a series of two steps at least ({2 * step_s:g} s), "
                         f"got {series.duration_s:g} s")
    return [series.mean_between(i * step_s, (i + 1) * step_s) for i in range(n)]


def _lag1(xs: list[float]) -> float:
    """Lag-1 autocorrelation (0 for fewer than three values or no spread), kept inside (-1, 1)."""
    if len(xs) < 3:
        return 0.0
    m = statistics.fmean(xs)
    var = sum((x - m) ** 2 for x in xs)
    if var <= 0.0:
        return 0.0
    ac = sum((a - m) * (b - m) for a, b in zip(xs, xs[1:])) / var
    return max(-0.99, min(0.99, ac))


def fit_shape(series: RateSeries, step_s: float = DEFAULT_STEP_S) -> RateShape:
    """The shape of ``series`` measured over steps of ``step_s`` (module docstring): its mean, the share
    and mean run of outage steps, and the spread and lag-1 autocorrelation of the log rate when up."""
    xs = _steps_of(series, step_s)
    mean = series.mean()  # over the whole period, a part step at its end too
    if mean <= 0.0:
        raise ValueError("a series that never carries a byte has no shape")
    out = [x < OUTAGE_SHARE_OF_MEAN * mean for x in xs]
    runs, run = [], 0
    for o in out + [False]:
        if o:
            run += 1
        elif run:
            runs.append(run)
            run = 0
    logs = [math.log(x) for x, o in zip(xs, out) if not o]
    return RateShape(mean_mbps=mean, log_sd=statistics.pstdev(logs) if len(logs) > 1 else 0.0,
                     ac1=_lag1(logs), outage_share=sum(out) / len(out),
                     outage_mean_steps=statistics.fmean(runs) if runs else 1.0, step_s=step_s)


def generate(shape: RateShape, duration_s: float, seed: int) -> RateSeries:
    """A series of ``duration_s`` seconds (whole steps, at least two) drawn from ``shape`` with ``seed``:
    an on/off chain for outages (stationary: out with probability ``outage_share``), a log-normal AR(1)
    rate when up, scaled so the time-weighted mean is ``shape.mean_mbps``. Equal neighbouring steps merge."""
    n = int(round(duration_s / shape.step_s))
    if n < 2:
        raise ValueError(f"duration_s must hold two steps of {shape.step_s:g} s at least, got {duration_s:g}")
    rng = random.Random(seed)
    # outages: leave an outage with probability 1 / mean length; enter one so that the stationary share holds
    leave = 1.0 / shape.outage_mean_steps
    enter = 0.0 if shape.outage_share == 0 else leave * shape.outage_share / (1.0 - shape.outage_share)
    down = rng.random() < shape.outage_share
    innovation = shape.log_sd * math.sqrt(1.0 - shape.ac1 ** 2)
    z = rng.gauss(0.0, shape.log_sd)
    raw: list[float] = []
    for _ in range(n):
        raw.append(0.0 if down else math.exp(z))
        z = shape.ac1 * z + rng.gauss(0.0, innovation)
        down = (rng.random() >= leave) if down else (rng.random() < min(1.0, enter))
    up_total = sum(raw)
    if up_total <= 0.0:  # every step drawn out: the link is up at its mean, the one honest fallback
        raw = [1.0] * n
        up_total = float(n)
    scale = shape.mean_mbps * n / up_total
    steps: list[tuple[float, float]] = []
    for i, r in enumerate(raw):
        rate = round(r * scale, 4)
        if not steps or steps[-1][1] != rate:
            steps.append((round(i * shape.step_s, 6), rate))
    return RateSeries(tuple(steps), n * shape.step_s)


def synthesize(name: str, up: RateShape, down: RateShape, duration_s: float, seed: int, source: str) -> RateTrace:
    """A two-direction synthetic trace; the downlink draws from ``seed + 1`` so the two move on their own."""
    return RateTrace(name=name, source=source, format="synthetic", up=generate(up, duration_s, seed),
                     down=generate(down, duration_s, seed + 1))
