"""When each client is there: on-line intervals per client over a horizon, read from a file or generated.

Why: a cross-device federation's clients come and go (FedScale drives its clock from the availability of
136k users over a week; production FL samples only devices that are idle, charging and on Wi-Fi). A round
can only sample clients that are on line, and a client that goes off line mid-round is a dropout. This
module is the data and its statistics; the engines use it through the plan (issue 32).

Sources:

- a CSV file, one on-line interval per line: ``client,start_s,end_s`` (a header line is allowed; ``#``
  starts a comment); a client's intervals must not overlap; the horizon is the latest end;
- :func:`two_state`: each client alternates on and off with exponential durations of the given means
  (a two-state Markov process, started in its stationary state: on with probability on / (on + off));
- :func:`diurnal`: the same, with the rate of coming back on line following the day (a cosine over 24 h,
  peaking at ``peak_hour``), as phones that train at night when idle and charging.

Every bad file is a :class:`~fedbw.errors.ConfigError` naming the file and line; every bad generator
argument one naming the argument.
"""

from __future__ import annotations

import bisect
import math
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fedbw.errors import ConfigError
from fedbw.files.atomic import write_text_atomic
from fedbw.traces.text import data_lines, trace_error

DAY_S = 86_400.0

Interval = tuple[float, float]


@dataclass(frozen=True)
class Availability:
    """Each client's on-line intervals (sorted, disjoint, within [0, ``horizon_s``])."""

    intervals: Mapping[int, tuple[Interval, ...]]
    horizon_s: float
    source: str

    def __post_init__(self) -> None:
        if not self.horizon_s > 0:
            raise ValueError("an availability trace needs a horizon > 0")
        for client, spans in self.intervals.items():
            for (a, b), (c, _) in zip(spans, spans[1:]):
                if c < b:
                    raise ValueError(f"client {client}: intervals overlap at {c:g} s")
            if any(not 0 <= a < b <= self.horizon_s for a, b in spans):
                raise ValueError(f"client {client}: an interval lies outside [0, {self.horizon_s:g}] s or is empty")

    @property
    def clients(self) -> list[int]:
        return sorted(self.intervals)

    def _span_at(self, client: int, t_s: float) -> Interval | None:
        spans = self.intervals.get(client, ())
        i = bisect.bisect_right(spans, (t_s, math.inf)) - 1
        return spans[i] if i >= 0 and spans[i][0] <= t_s < spans[i][1] else None

    def is_online(self, client: int, t_s: float) -> bool:
        return self._span_at(client, t_s) is not None

    def online_until(self, client: int, t_s: float) -> float | None:
        """When a client on line at ``t_s`` goes off line (None: it is off line at ``t_s``)."""
        span = self._span_at(client, t_s)
        return None if span is None else span[1]

    def next_online(self, client: int, t_s: float) -> float | None:
        """The first time at or after ``t_s`` the client is on line (None: never again in the horizon)."""
        if self.is_online(client, t_s):
            return t_s
        return next((a for a, _ in self.intervals.get(client, ()) if a >= t_s), None)

    def online_clients(self, t_s: float) -> list[int]:
        return [c for c in self.clients if self.is_online(c, t_s)]

    def online_share(self, t_s: float) -> float:
        return len(self.online_clients(t_s)) / len(self.intervals) if self.intervals else 0.0

    def fraction(self, client: int) -> float:
        """The share of the horizon the client is on line."""
        return sum(b - a for a, b in self.intervals.get(client, ())) / self.horizon_s

    def stats(self, samples: int = 288) -> AvailabilityStats:
        """The numbers `fedbw trace availability` prints (the share on line sampled at ``samples`` times)."""
        sessions = [b - a for spans in self.intervals.values() for a, b in spans]
        gaps = [c - b for spans in self.intervals.values() for (_, b), (c, _) in zip(spans, spans[1:])]
        shares = sorted(self.online_share(self.horizon_s * (i + 0.5) / samples) for i in range(samples))
        fractions = [self.fraction(c) for c in self.clients]
        return AvailabilityStats(
            clients=len(self.intervals), horizon_s=self.horizon_s,
            mean_fraction=sum(fractions) / len(fractions) if fractions else 0.0,
            mean_session_s=sum(sessions) / len(sessions) if sessions else 0.0,
            mean_gap_s=sum(gaps) / len(gaps) if gaps else None,
            share_p10=_quantile(shares, 0.1), share_p50=_quantile(shares, 0.5), share_p90=_quantile(shares, 0.9))


@dataclass(frozen=True)
class AvailabilityStats:
    clients: int
    horizon_s: float
    mean_fraction: float  #: mean over clients of the share of the horizon each is on line
    mean_session_s: float  #: mean length of an on-line interval
    mean_gap_s: float | None  #: mean time off line between two sessions of a client (None: no client came back)
    share_p10: float  #: the share of clients on line, 10th percentile over time
    share_p50: float
    share_p90: float


def _quantile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(p * len(sorted_values)) - 1))]


# ------------------------------------------------------------------------------------------------- files

def read_availability(path: str | os.PathLike[str]) -> Availability:
    """A CSV of on-line intervals, ``client,start_s,end_s`` per line (module docstring)."""
    spans: dict[int, list[Interval]] = {}
    for i, (n, line) in enumerate(data_lines(path)):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 3:
            raise trace_error(path, f"expected client,start_s,end_s; got {len(fields)} field(s)", n)
        if i == 0 and not _is_number(fields[1]):
            continue  # a header
        try:
            client = int(fields[0])
        except ValueError:
            raise trace_error(path, f"client {fields[0]!r} is not a whole number", n) from None
        start, end = (_seconds(path, n, name, text) for name, text in (("start_s", fields[1]), ("end_s", fields[2])))
        if client < 0:
            raise trace_error(path, f"client {client} is negative", n)
        if not end > start:
            raise trace_error(path, f"end_s ({end:g}) must be after start_s ({start:g})", n)
        own = spans.setdefault(client, [])
        clash = next(((a, b) for a, b in own if start < b and a < end), None)
        if clash is not None:
            raise trace_error(path, f"client {client}: {start:g}–{end:g} s overlaps {clash[0]:g}–{clash[1]:g} s", n)
        own.append((start, end))
    if not spans:
        raise trace_error(path, "no interval lines (only a header)")
    horizon = max(b for own in spans.values() for _, b in own)
    return Availability({c: tuple(sorted(v)) for c, v in spans.items()}, horizon, f"file {os.fspath(path)}")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _seconds(path: str | os.PathLike[str], line: int, name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise trace_error(path, f"{name} {text!r} is not a number", line) from None
    if not math.isfinite(value) or value < 0:
        raise trace_error(path, f"{name} must be a finite number ≥ 0, got {text}", line)
    return value


def write_availability(path: str | os.PathLike[str], availability: Availability) -> None:
    """The CSV :func:`read_availability` reads (a generated trace saved to be reused or edited)."""
    lines = [f"# {availability.source}; horizon {availability.horizon_s:g} s", "client,start_s,end_s"]
    lines += [f"{c},{a:.3f},{b:.3f}" for c in availability.clients for a, b in availability.intervals[c]]
    write_text_atomic(path, "\n".join(lines) + "\n")  # a path it cannot write: one RunError line


# -------------------------------------------------------------------------------------------- generators

def _check(**values: float) -> None:
    for name, value in values.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ConfigError(f"availability: {name} must be a number > 0, got {value!r}")


def two_state(clients: int, mean_on_s: float, mean_off_s: float, horizon_s: float, seed: int = 0) -> Availability:
    """Each client on and off in turn for exponential durations of means ``mean_on_s`` and ``mean_off_s``,
    started in the stationary state (on with probability on / (on + off)); seeded per client."""
    _check(clients=clients, mean_on_s=mean_on_s, mean_off_s=mean_off_s, horizon_s=horizon_s)
    return _generate(clients, horizon_s, seed, mean_on_s, lambda t: 1.0 / mean_off_s, 1.0 / mean_off_s,
                     mean_on_s / (mean_on_s + mean_off_s), f"two-state: on {mean_on_s:g} s, off {mean_off_s:g} s mean")


def diurnal(clients: int, mean_on_s: float, mean_off_s: float, horizon_s: float, amplitude: float = 0.8,
            peak_hour: float = 2.0, seed: int = 0) -> Availability:
    """:func:`two_state` with the rate of coming back on line × (1 + ``amplitude`` · cos(2π (t − peak) / 24 h)):
    most clients on line around ``peak_hour`` (hours after the trace's start), fewest twelve hours later."""
    _check(clients=clients, mean_on_s=mean_on_s, mean_off_s=mean_off_s, horizon_s=horizon_s)
    if not 0 <= amplitude < 1:
        raise ConfigError(f"availability: amplitude must lie in [0, 1), got {amplitude!r}")
    peak_s = 3600.0 * peak_hour

    def rate(t: float) -> float:
        return (1.0 + amplitude * math.cos(2 * math.pi * (t - peak_s) / DAY_S)) / mean_off_s

    return _generate(clients, horizon_s, seed, mean_on_s, rate, (1.0 + amplitude) / mean_off_s,
                     mean_on_s / (mean_on_s + mean_off_s),
                     f"diurnal: on {mean_on_s:g} s, off {mean_off_s:g} s mean, amplitude {amplitude:g}, "
                     f"peak at {peak_hour:g} h")


def _generate(clients: int, horizon_s: float, seed: int, mean_on_s: float, on_rate: Callable[[float], float],
              max_rate: float, p_on: float, source: str) -> Availability:
    """Alternate on (exponential, mean ``mean_on_s``) and off (coming back at ``on_rate(t)``, drawn by
    thinning under ``max_rate``) from a stationary start, per client with its own seeded generator."""
    out: dict[int, tuple[Interval, ...]] = {}
    for client in range(int(clients)):
        rng = random.Random(f"{seed}:availability:{client}")
        t, online, spans = 0.0, rng.random() < p_on, []
        while t < horizon_s:
            if online:
                end = min(horizon_s, t + rng.expovariate(1.0 / mean_on_s))
                spans.append((t, end))
                t = end
            else:
                while t < horizon_s:  # thinning: candidate events at max_rate, kept with rate(t) / max_rate
                    t += rng.expovariate(max_rate)
                    if rng.random() * max_rate <= on_rate(t):
                        break
            online = not online
        out[client] = tuple(spans)
    return Availability(out, horizon_s, f"{source}, {clients} clients, {horizon_s:g} s, seed {seed}")
