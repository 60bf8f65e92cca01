"""The link effects as small stages: rate (a shared token bucket) and delay (latency + jitter).

Order in one direction: bytes read from the sender → :class:`RateStage` (the client's token bucket,
shared by all of the client's connections, granting quanta round robin) → :class:`DelayStage`
(one-way latency + jitter) → the receiver's socket. Rate first, then delay, like a real access link:
a byte is serialized onto the wire and then propagates. Each chunk's delay is added to its *ideal*
serialization time, not to the moment a timer happened to fire, so timer lateness is never added.

The stages are policies without timers or sockets: the rate stage answers "which flow sends how
many bytes, finishing serialization when", the delay stage "when is this chunk due at the
receiver". :class:`~fedbw.shaper.scheduler.LinkScheduler` runs them on one timer per link direction.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

from fedbw.shaper.bucket import RateSchedule, TokenBucket
from fedbw.timewarp import Dilation

#: A booking due within this much of "now" is sent at once instead of through a timer round trip.
IMMEDIATE_S = 0.0002
#: A timer that fires up to this much before its deadline is accepted: uvloop rounds waits to the
#: nearest ms from a stale ms clock, and waiting again for less than 1 ms is not possible there.
FIRE_SLACK_S = 0.001
#: Rate stage quantum: at most this much link time per grant, so a 0.5 s window of a paced flow is
#: off by at most 1 % from quantization; bounded below/above in bytes.
DEFAULT_QUANTUM_S = 0.005
#: The quantum of a shaper with more than ``MANY_LINKS`` routes (:func:`quantum_for`).
MANY_LINKS_QUANTUM_S = 0.01
MANY_LINKS = 8
MIN_QUANTUM_BYTES = 1448
MAX_QUANTUM_BYTES = 64 * 1024


def quantum_for(n_routes: int) -> float:
    """The grant quantum a shaper of ``n_routes`` links uses unless told otherwise.

    Why two: the proxy's CPU grows with grants per second (one socket write each: 200 per second per
    busy link at 5 ms, at any rate), and the 0.5 s windows' resolution with the quantum (1 % at 5 ms,
    2 % at 10 ms). With a few links CPU is cheap and 5 ms keeps the windows and a quiet loop's timers
    tight (a loop that wakes every 10 ms fires its timers later: beside one 30 Mbps link a probe's
    added-latency error came out larger, benchmarks/results/shaper-quantum-latency.json); with many,
    10 ms halves the grants and so most of the proxy's CPU (docs/reliability.md) and the windows stay
    within ±2 %.
    """
    return MANY_LINKS_QUANTUM_S if n_routes > MANY_LINKS else DEFAULT_QUANTUM_S


def dilated_quantum_s(n_routes: int, dilation: Dilation) -> float:
    """:func:`quantum_for` under ``dilation``: the same link time per grant, so K× as long in real seconds
    (at most 1 s).

    Why: a grant is one write, and the receiver pays for every read. Rates ÷ K with the quantum left in
    real time would cut each grant to 1/K of its bytes and make the receiver do K× the reads per emulated
    byte: a dilated SuperLink taking eight uploads then spends its capped core on reads, not on Flower,
    which no real server at those rates does. Scaled, every grant carries the bytes it carries undilated.
    """
    return min(1.0, dilation.real_s(quantum_for(n_routes)))


class PerfTimer:
    """Runs callbacks at ``clock()`` deadlines (``time.perf_counter()`` unless given) on an event loop,
    learning its lateness.

    Both loops wait in whole milliseconds: asyncio's epoll rounds up (≈ 0.7 ms late on average
    here, and CPython's double rounding turns some waits, e.g. 9 ms, into one more ms); uvloop rounds
    to the nearest ms from a cached ms clock (≈ 0.15 ms late on average, sometimes up to 1 ms early).
    The timer tracks the *median* lateness of the callbacks (a step up when late, a step down when
    early, so a 20 ms hiccup of a busy machine moves it by one step only) and schedules that much
    early, which centres deliveries on their deadlines.
    """

    __slots__ = ("_loop", "_clock", "lead_s", "_same_epoch")

    STEP_S = 0.00002
    MAX_LEAD_S = 0.001

    def __init__(self, loop: asyncio.AbstractEventLoop, *, lead_s: float = 0.0005,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._loop = loop
        self._clock = clock  #: the clock deadlines are on: the link's (a virtual one in tests)
        self.lead_s = lead_s
        # On Linux loop.time() (asyncio: CLOCK_MONOTONIC; uvloop: libuv's cached ms clock) counts
        # from the same origin as perf_counter(). Then a deadline is handed to call_at() as is:
        # uvloop measures call_later() delays from its stale cached clock and would fire early by
        # however long the current loop iteration has run.
        self._same_epoch = abs(loop.time() - clock()) < 0.05

    def call_at(self, t_s: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        """Schedule ``callback`` at clock time ``t_s`` (minus the learned lead)."""
        if self._same_epoch:
            return self._loop.call_at(t_s - self.lead_s, callback)
        delay = t_s - self._clock() - self.lead_s
        return self._loop.call_later(delay if delay > 0.0 else 0.0, callback)

    def observe(self, lateness_s: float) -> None:
        """Feed how late (positive) or early a scheduled callback ran against its deadline."""
        if lateness_s > 0.0:
            if self.lead_s < self.MAX_LEAD_S:
                self.lead_s += self.STEP_S
        elif self.lead_s > 0.0:
            self.lead_s = max(0.0, self.lead_s - self.STEP_S)


class SharedLink:
    """A link every client's same direction also books on: the upstream's (the server's) own NIC.

    Clients take turns on it, one quantum each (a client books its next quantum only when its last is
    through both its own link and this one). Equal turns share bytes fairly only if the turns are the
    same size, so a client's quantum is capped at the fair share's: the link's rate over the clients
    that booked within ``window_s``, times the quantum time. A client whose own link is slower than
    that books smaller or less often and keeps its own rate; the others split what is left — max-min
    fairness, as competing TCP flows reach on average.
    """

    __slots__ = ("bucket", "window_s", "_last")

    def __init__(self, bucket: TokenBucket, window_s: float = 0.05) -> None:
        self.bucket = bucket
        self.window_s = window_s
        self._last: dict[int, float] = {}

    def fair_quantum(self, key: int, now_s: float, quantum_s: float) -> float:
        """The most bytes client ``key`` may book in one turn now (and note that it is active)."""
        self._last[key] = now_s
        active = sum(1 for t in self._last.values() if now_s - t <= self.window_s)
        return self.bucket.schedule.rate_at(now_s) * quantum_s / max(1, active)


class Flow(Protocol):
    """What the rate stage needs from one direction of one connection."""

    in_ring: bool

    @property
    def sendable(self) -> bool:
        """Has bytes waiting and a receiver that is not applying backpressure."""

    @property
    def pending_bytes(self) -> int:
        """Bytes waiting for the rate stage."""


class RateStage:
    """One direction of one client's link: a token bucket shared by all that client's connections.

    Flows with data wait in a ring. Each grant books one quantum (≤ ``quantum_s`` of link time) for
    the flow at the head and moves it to the back: round robin, so a small request is not stuck
    behind a bulk upload's whole queue, and the aggregate of all connections is the link rate. A new
    grant is made only once the previous one is through the bucket (``t_free`` ≤ now), so the stage
    runs at most one quantum ahead of the wire.
    """

    __slots__ = ("_bucket", "_schedule", "_quantum_s", "_min_q", "_max_q", "_const_q", "_ring", "_continuous",
                 "_demand_s", "_shared", "_fast_rate")

    def __init__(
        self,
        bucket: TokenBucket,
        *,
        quantum_s: float = DEFAULT_QUANTUM_S,
        min_quantum_bytes: int = MIN_QUANTUM_BYTES,
        max_quantum_bytes: int = MAX_QUANTUM_BYTES,
        shared: SharedLink | None = None,
    ) -> None:
        self._bucket = bucket
        self._shared = shared  #: the server's own link, booked by every client's same direction too
        self._schedule = bucket.schedule
        self._quantum_s = quantum_s
        self._min_q = min_quantum_bytes
        self._max_q = max_quantum_bytes
        self._const_q = self._quantum_at(0.0) if self._schedule.constant else 0
        self._ring: deque[Flow] = deque()
        # _continuous: some flow has been ready ever since the last grant, so the next grant follows
        # on from the bucket's t_free however late it is made. Otherwise the link idled until
        # _demand_s, when a flow became ready (None: none has yet).
        self._continuous = False
        self._demand_s: float | None = None
        # The common link: one finite rate, no trace, no shared server link, no burst. Then
        # grant_ready() books inline what reserve() would (same arithmetic, no calls per grant).
        base = self._schedule.rate_at(0.0)
        simple = self._schedule.constant and shared is None and bucket.burst_bytes == 0.0
        self._fast_rate = base if simple and 0.0 < base < math.inf else None

    def reschedule(self, schedule: RateSchedule) -> None:
        """The link's rate follows ``schedule`` from now on (a traced link anchored again: the schedule is
        the same steps, shifted, so it is no more constant than before and no fast path changes)."""
        self._bucket.reschedule(schedule)
        self._schedule = schedule

    @property
    def quantum_s(self) -> float:
        return self._quantum_s

    @property
    def t_free(self) -> float:
        """When everything granted so far is through the bucket (inf: link down for good)."""
        return self._bucket.t_free

    @property
    def waiting(self) -> bool:
        """Some flow may want a grant."""
        return bool(self._ring)

    def _quantum_at(self, now_s: float) -> int:
        rate = self._schedule.rate_at(now_s)
        if rate == math.inf:
            return self._max_q
        q = int(rate * self._quantum_s)
        return self._min_q if q < self._min_q else (self._max_q if q > self._max_q else q)

    def add(self, flow: Flow, now_s: float) -> bool:
        """``flow`` became ready (bytes arrived or its receiver has room) at ``now_s``.

        Returns True if it joined the ring, False if it was already waiting its turn.
        """
        if not self._continuous and self._demand_s is None:
            self._demand_s = now_s  # the link idled until now
        if flow.in_ring:
            return False
        flow.in_ring = True
        self._ring.append(flow)
        return True

    def next_grant(self, now_s: float) -> tuple[Flow, int, float] | None:
        """Book the next quantum if the bucket is free by ``now_s``: (flow, bytes, t_ready)."""
        bucket = self._bucket
        if bucket._t_free > now_s:
            return None
        flow = self._next_ready()
        if flow is None:
            return None
        n = self._const_q or self._quantum_at(now_s)
        shared = self._shared
        if shared is not None:
            fair = shared.fair_quantum(id(self), now_s, self._quantum_s)
            if fair < n:
                n = max(self._min_q, int(fair))
        pending = flow.pending_bytes
        if pending < n:
            n = pending
        if self._continuous:
            t_ready = bucket.reserve(n, continuing=True)
        else:
            t_ready = bucket.reserve(n, demand_s=self._demand_s)
            self._demand_s = None
        if shared is not None:
            t_shared = shared.bucket.reserve(n, demand_s=now_s)
            if t_shared > t_ready:
                t_ready = t_shared
                bucket.hold(t_ready)
        flow.in_ring = False  # the caller takes the bytes, then calls requeue()
        return flow, n, t_ready

    def grant_ready(self, horizon_s: float, push: Callable[[Flow, int, float], None]) -> bool:
        """Make every grant whose turn has come by ``horizon_s``; returns whether it made any.

        Each grant is handed to ``push(flow, n_bytes, t_ready)``, which takes the bytes from the flow;
        the flow is then requeued. The grants are exactly those of calling :meth:`next_grant` and
        :meth:`requeue` in a loop. Why a loop of its own: at 32 links × 30 Mbps the proxy makes
        ≈ 6,400 grants a second, and on a constant-rate link this books each one inline.
        """
        rate = self._fast_rate
        if rate is None:
            made = False
            while (grant := self.next_grant(horizon_s)) is not None:
                flow, n, t_ready = grant
                push(flow, n, t_ready)
                self.requeue(flow)
                made = True
            return made
        bucket = self._bucket
        t_free = bucket._t_free
        if t_free > horizon_s:
            return False
        ring = self._ring
        quantum = self._const_q
        clock = bucket._clock
        max_lag = bucket.max_lag_s
        made = False
        while t_free <= horizon_s:
            flow = self._next_ready()
            if flow is None:
                break
            n = flow.pending_bytes
            if n > quantum:
                n = quantum
            now = clock()
            if self._continuous:  # TokenBucket.reserve(n, continuing=True)
                floor = now - max_lag
            else:  # TokenBucket.reserve(n, demand_s=...) without burst
                demand = self._demand_s
                floor = now if demand is None or demand > now else demand
                self._demand_s = None
            if floor > t_free:
                t_free = floor
            t_free += n / rate
            bucket._t_free = t_free
            flow.in_ring = False
            push(flow, n, t_free)
            made = True
            if not flow.in_ring and flow.sendable:  # requeue()
                flow.in_ring = True
                ring.append(flow)
                self._continuous = True
            else:
                for waiting in ring:
                    if waiting.sendable:
                        self._continuous = True
                        break
                else:
                    self._continuous = False
        return made

    def _next_ready(self) -> Flow | None:
        """The first flow in the ring with bytes to send (those without leave the ring); None: the
        link goes idle (the next flow to become ready marks when demand came back)."""
        ring = self._ring
        while ring:
            flow = ring.popleft()
            if flow.sendable:
                return flow
            flow.in_ring = False
        self._continuous = False
        self._demand_s = None
        return None

    def requeue(self, flow: Flow) -> None:
        """After a grant's bytes were taken: back to the end of the ring if it has more to send."""
        ring = self._ring
        if not flow.in_ring and flow.sendable:
            flow.in_ring = True
            ring.append(flow)
        # Flows parked in the ring behind a full receiver do not count as demand.
        for waiting in ring:
            if waiting.sendable:
                self._continuous = True
                return
        self._continuous = False

    def clear(self) -> None:
        for flow in self._ring:
            flow.in_ring = False
        self._ring.clear()


class DelayStage:
    """One-way latency and jitter of one link direction, preserving each flow's byte order.

    A chunk that left the rate stage at ``t_ready`` is due at ``t_ready + latency + U(-jitter,
    +jitter)``, never before ``t_ready`` and never before the same flow's previous chunk (TCP does
    not reorder a byte stream). The jitter draw comes from a seeded RNG, so a run is reproducible.
    """

    __slots__ = ("latency_s", "jitter_s", "_rng")

    def __init__(self, latency_s: float, jitter_s: float = 0.0, rng: random.Random | None = None) -> None:
        self.latency_s = latency_s
        self.jitter_s = jitter_s
        self._rng = rng if rng is not None else random.Random(0)

    @property
    def min_delay_s(self) -> float:
        return max(0.0, self.latency_s - self.jitter_s)

    def due(self, t_ready_s: float, prev_due_s: float) -> float:
        """When a chunk ready at ``t_ready_s`` reaches the receiver."""
        delay = self.latency_s
        if self.jitter_s > 0.0:
            delay += self._rng.uniform(-self.jitter_s, self.jitter_s)
            if delay < 0.0:
                delay = 0.0
        due = t_ready_s + delay
        return due if due > prev_due_s else prev_due_s
