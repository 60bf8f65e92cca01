"""What a client's link is (:class:`LinkSpec`), where it sits (:class:`ClientRoute`), and its runtime.

Rates are **TCP payload** rates in Mbps (10^6 bit/s), which is what a transfer-time model and a
receiver measure; a kernel shaper (tc) counts Ethernet frames, ≈ 4.4 % more for full-size segments.
"up" is client → upstream (server), "down" is upstream → client.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any

from fedbw.shaper.bucket import RateSchedule, TokenBucket
from fedbw.timewarp import Dilation
from fedbw.shaper.errors import ShaperError
from fedbw.shaper.scheduler import LinkScheduler
from fedbw.shaper.stages import DEFAULT_QUANTUM_S, DelayStage, PerfTimer, RateStage, SharedLink

Trace = tuple[tuple[float, float], ...]

DIRECTIONS = ("up", "down")


def mbps_to_bytes_per_s(mbps: float) -> float:
    """Mbps (10^6 bit/s) → bytes per second."""
    return mbps * 1e6 / 8.0


def _number(owner: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ShaperError(f"{owner}.{name} must be a number, got {value!r}")
    value = float(value)
    if math.isnan(value):
        raise ShaperError(f"{owner}.{name} is NaN; give a number")
    return value


def _check_rate(name: str, value: Any) -> float:
    value = _number("LinkSpec", name, value)
    if value <= 0.0:
        raise ShaperError(
            f"LinkSpec.{name} must be > 0 Mbps, got {value:g}; to take a link down for a while use a "
            f"trace step with rate 0 (e.g. {name.split('_')[0]}_trace=((10, 0), (15, {name.split('_')[0]}_mbps)))"
        )
    return value


def _check_ms(name: str, value: Any) -> float:
    value = _number("LinkSpec", name, value)
    if value < 0.0 or math.isinf(value):
        raise ShaperError(f"LinkSpec.{name} must be a finite number of ms >= 0, got {value:g}")
    return value


def _check_trace(name: str, trace: Any) -> Trace:
    try:
        steps = [tuple(step) for step in trace]
    except TypeError:
        raise ShaperError(f"LinkSpec.{name} must be a sequence of (t_s, mbps) pairs, got {trace!r}") from None
    out: list[tuple[float, float]] = []
    prev = -math.inf
    for i, step in enumerate(steps):
        if len(step) != 2:
            raise ShaperError(f"LinkSpec.{name}[{i}] must be a (t_s, mbps) pair, got {step!r}")
        t_s = _number("LinkSpec", f"{name}[{i}].t_s", step[0])
        mbps = _number("LinkSpec", f"{name}[{i}].mbps", step[1])
        if t_s < 0.0 or math.isinf(t_s):
            raise ShaperError(f"LinkSpec.{name}[{i}]: time must be finite and >= 0 s, got {t_s:g}")
        if t_s <= prev:
            raise ShaperError(f"LinkSpec.{name}[{i}]: times must increase strictly, got {t_s:g} after {prev:g}")
        if mbps < 0.0:
            raise ShaperError(f"LinkSpec.{name}[{i}]: rate must be >= 0 Mbps (0 = link down), got {mbps:g}")
        prev = t_s
        out.append((t_s, mbps))
    return tuple(out)


@dataclass(frozen=True)
class LinkSpec:
    """One client's access link, each direction shaped on its own.

    Rates are TCP payload Mbps (10^6 bit/s; ``inf`` = unshaped). Latencies and jitter are one-way ms;
    jitter is a uniform draw in ±``jitter_*_ms`` per chunk, order-preserving. A trace is a tuple of
    ``(t_s, mbps)`` steps, ``t_s`` counted from shaper start; from each step on its rate replaces the
    base rate (0 = link down until the next step). ``seed`` makes jitter reproducible.
    """

    up_mbps: float
    down_mbps: float
    latency_up_ms: float = 0.0
    latency_down_ms: float = 0.0
    jitter_up_ms: float = 0.0
    jitter_down_ms: float = 0.0
    up_trace: Trace = ()
    down_trace: Trace = ()
    seed: int = 0

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "up_mbps", _check_rate("up_mbps", self.up_mbps))
        set_(self, "down_mbps", _check_rate("down_mbps", self.down_mbps))
        for name in ("latency_up_ms", "latency_down_ms", "jitter_up_ms", "jitter_down_ms"):
            set_(self, name, _check_ms(name, getattr(self, name)))
        set_(self, "up_trace", _check_trace("up_trace", self.up_trace))
        set_(self, "down_trace", _check_trace("down_trace", self.down_trace))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ShaperError(f"LinkSpec.seed must be an integer, got {self.seed!r}")

    @classmethod
    def from_rtt(
        cls,
        up_mbps: float,
        down_mbps: float,
        rtt_ms: float,
        jitter_ms: float = 0.0,
        *,
        up_trace: Trace = (),
        down_trace: Trace = (),
        seed: int = 0,
    ) -> LinkSpec:
        """A link whose round trip adds ``rtt_ms``: half of it each way.

        ``jitter_ms`` is round-trip jitter: each direction gets ±``jitter_ms / 2``, so the added RTT
        stays within ``rtt_ms ± jitter_ms``.
        """
        rtt = _check_ms("rtt_ms", rtt_ms)
        jitter = _check_ms("jitter_ms", jitter_ms)
        return cls(
            up_mbps=up_mbps,
            down_mbps=down_mbps,
            latency_up_ms=rtt / 2.0,
            latency_down_ms=rtt / 2.0,
            jitter_up_ms=jitter / 2.0,
            jitter_down_ms=jitter / 2.0,
            up_trace=up_trace,
            down_trace=down_trace,
            seed=seed,
        )

    def rate_mbps(self, direction: str) -> float:
        return self.up_mbps if direction == "up" else self.down_mbps

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (``null`` for an unshaped ``inf`` rate): for the ledger header and for
        handing a link to a shaper process."""
        d: dict[str, Any] = dict(self.__dict__)
        for key in ("up_mbps", "down_mbps"):
            if d[key] == math.inf:
                d[key] = None  # JSON has no inf; null = unshaped
        d["up_trace"] = [list(step) for step in self.up_trace]
        d["down_trace"] = [list(step) for step in self.down_trace]
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinkSpec:
        """The inverse of :meth:`to_dict` (validated like any LinkSpec)."""
        d = dict(data)
        for key in ("up_mbps", "down_mbps"):
            if key in d and d[key] is None:
                d[key] = math.inf
        for key in ("up_trace", "down_trace"):
            d[key] = tuple(tuple(step) for step in d.get(key, ()))
        try:
            return cls(**d)
        except TypeError as exc:
            raise ShaperError(f"not a link description: {exc}") from None

    def dilated(self, dilation: Dilation) -> LinkSpec:
        """This link as it runs under ``dilation`` (every emulated second lasts K real ones): rates
        ÷ K, latencies, jitter and trace times × K."""
        d = dilation
        return LinkSpec(
            up_mbps=d.slower(self.up_mbps), down_mbps=d.slower(self.down_mbps),
            latency_up_ms=d.real_s(self.latency_up_ms), latency_down_ms=d.real_s(self.latency_down_ms),
            jitter_up_ms=d.real_s(self.jitter_up_ms), jitter_down_ms=d.real_s(self.jitter_down_ms),
            up_trace=tuple((d.real_s(t), d.slower(r)) for t, r in self.up_trace),
            down_trace=tuple((d.real_s(t), d.slower(r)) for t, r in self.down_trace), seed=self.seed)

    def trace(self, direction: str) -> Trace:
        return self.up_trace if direction == "up" else self.down_trace

    def latency_ms(self, direction: str) -> float:
        return self.latency_up_ms if direction == "up" else self.latency_down_ms

    def jitter_ms(self, direction: str) -> float:
        return self.jitter_up_ms if direction == "up" else self.jitter_down_ms


def _check_port(name: str, value: Any, *, allow_zero: bool) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ShaperError(f"ClientRoute.{name} must be an integer port, got {value!r}")
    low = 0 if allow_zero else 1
    if not low <= value <= 65535:
        raise ShaperError(f"ClientRoute.{name} must be in {low}..65535, got {value}")
    return value


@dataclass(frozen=True)
class ClientRoute:
    """One client: the port its traffic enters on, where it goes, and the link in between.

    ``listen_port`` 0 lets the OS pick a free port (read it from ``Shaper.ports`` after start).
    """

    client_id: str
    listen_host: str
    listen_port: int
    upstream_host: str
    upstream_port: int
    link: LinkSpec

    def __post_init__(self) -> None:
        if not isinstance(self.client_id, str) or not self.client_id:
            raise ShaperError(f"ClientRoute.client_id must be a non-empty string, got {self.client_id!r}")
        for name in ("listen_host", "upstream_host"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ShaperError(f"ClientRoute.{name} must be a host name or address, got {value!r}")
        _check_port("listen_port", self.listen_port, allow_zero=True)
        _check_port("upstream_port", self.upstream_port, allow_zero=False)
        if not isinstance(self.link, LinkSpec):
            raise ShaperError(f"ClientRoute.link must be a LinkSpec, got {type(self.link).__name__}")

    def to_dict(self) -> dict[str, Any]:
        return {"client_id": self.client_id, "listen_host": self.listen_host, "listen_port": self.listen_port,
                "upstream_host": self.upstream_host, "upstream_port": self.upstream_port,
                "link": self.link.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClientRoute:
        try:
            return cls(data["client_id"], data["listen_host"], data["listen_port"], data["upstream_host"],
                       data["upstream_port"], LinkSpec.from_dict(data["link"]))
        except KeyError as exc:
            raise ShaperError(f"a client route needs {exc.args[0]!r}") from None


class LinkDirection:
    """Runtime of one direction of one client's link: its stages and their scheduler.

    ``scheduler`` is None when the direction neither shapes nor delays (bytes go straight through).
    """

    __slots__ = ("direction", "rate", "delay", "scheduler", "_base", "_steps")

    def __init__(
        self,
        client_id: str,
        spec: LinkSpec,
        direction: str,
        *,
        t0_s: float,
        loop: asyncio.AbstractEventLoop,
        quantum_s: float,
        burst_bytes: float,
        clock: Callable[[], float],
        shared: SharedLink | None = None,
    ) -> None:
        self.direction = direction
        base = spec.rate_mbps(direction)
        self._base = mbps_to_bytes_per_s(base)
        self._steps = [(t_s, mbps_to_bytes_per_s(mbps)) for t_s, mbps in spec.trace(direction)]  #: from its start
        steps = [(t0_s + t_s, rate) for t_s, rate in self._steps]
        self.rate: RateStage | None = None
        if steps or base != math.inf or shared is not None:
            schedule = RateSchedule(self._base, steps)
            bucket = TokenBucket(schedule, burst_bytes=burst_bytes, clock=clock, start_s=t0_s)
            self.rate = RateStage(bucket, quantum_s=quantum_s, shared=shared)
        latency_s = spec.latency_ms(direction) / 1e3
        jitter_s = spec.jitter_ms(direction) / 1e3
        self.delay: DelayStage | None = None
        if latency_s > 0.0 or jitter_s > 0.0:
            # str seeds are hashed with SHA-512 by random.Random: stable across runs and processes.
            rng = random.Random(f"{spec.seed}:{client_id}:{direction}")
            self.delay = DelayStage(latency_s, jitter_s, rng)
        self.scheduler: LinkScheduler | None = None
        if self.rate is not None or self.delay is not None:
            # A timer of its own: how late callbacks land depends on what schedules them (a chain of
            # timer callbacks lands differently from I/O-driven ones), so each link learns its own.
            self.scheduler = LinkScheduler(self.rate, self.delay, timer=PerfTimer(loop, clock=clock),
                                           clock=clock)

    def anchor_trace(self, t0_s: float) -> None:
        """Start this direction's trace again from ``t0_s`` (clock time): emulate anchors every trace at the
        first round's start, the model's t = 0. A direction without a trace is left as it is."""
        if self._steps and self.rate is not None:
            self.rate.reschedule(RateSchedule(self._base, [(t0_s + t_s, r) for t_s, r in self._steps]))

    def close(self) -> None:
        if self.scheduler is not None:
            self.scheduler.close()


class Link:
    """One client's link at run time: both directions, shared by all the client's connections."""

    __slots__ = ("client_id", "spec", "up", "down")

    def __init__(
        self,
        client_id: str,
        spec: LinkSpec,
        *,
        t0_s: float,
        loop: asyncio.AbstractEventLoop,
        quantum_s: float = DEFAULT_QUANTUM_S,
        burst_bytes: float = 0.0,
        clock: Callable[[], float] = time.perf_counter,
        shared: Mapping[str, SharedLink] | None = None,
    ) -> None:
        self.client_id = client_id
        self.spec = spec
        kw = dict(t0_s=t0_s, loop=loop, quantum_s=quantum_s, burst_bytes=burst_bytes, clock=clock)
        shared = shared or {}
        self.up = LinkDirection(client_id, spec, "up", shared=shared.get("up"), **kw)
        self.down = LinkDirection(client_id, spec, "down", shared=shared.get("down"), **kw)

    def anchor_traces(self, t0_s: float) -> None:
        self.up.anchor_trace(t0_s)
        self.down.anchor_trace(t0_s)

    def close(self) -> None:
        self.up.close()
        self.down.close()
