"""Runs one direction of one link: rate grants and delayed deliveries on a single timer.

Why one timer: every timer callback and every socket write costs CPU, and with 32 links at 30 Mbps
the proxy makes ≈ 6,400 grants a second. Chunks granted by the rate stage wait in one heap keyed by
their due time (from the delay stage); the scheduler wakes at the earliest due time, delivers what is
due, and makes the grants whose turn has come in the same wake. A grant may lag its ideal time by up
to ``grant_lag_s`` = min(quantum, latency − jitter): the chunk's due time is computed from the ideal
time, so the lag changes nothing at the receiver, and with latency ≥ one quantum every wake is a
delivery wake (one callback per chunk instead of two).
"""

from __future__ import annotations

import asyncio
import heapq
import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from fedbw.shaper.stages import FIRE_SLACK_S, IMMEDIATE_S, MAX_QUANTUM_BYTES, DelayStage, PerfTimer, RateStage


class Deliverable(Protocol):
    """What the scheduler needs from a flow (the proxy's Pipe)."""

    in_ring: bool
    last_due_s: float

    @property
    def sendable(self) -> bool: ...

    @property
    def pending_bytes(self) -> int: ...

    def take(self, n_bytes: int) -> Any:
        """Remove and return the next ``n_bytes`` (bytes-like) of pending data."""

    def deliver(self, chunk: Any) -> None:
        """Write a due chunk to the receiver."""


class LinkScheduler:
    """Drives a rate stage (optional) and a delay stage (optional) for all flows of a link direction."""

    __slots__ = ("_rate", "_delay", "_timer", "_clock", "_heap", "_seq", "_handle", "_handle_at",
                 "_running", "_closed", "grant_lag_s")

    def __init__(
        self,
        rate: RateStage | None,
        delay: DelayStage | None,
        *,
        timer: PerfTimer,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._rate = rate
        self._delay = delay
        self._timer = timer
        self._clock = clock
        self._heap: list[tuple[float, int, Deliverable, Any]] = []
        self._seq = 0
        self._handle: asyncio.TimerHandle | None = None
        self._handle_at = math.inf
        self._running = False
        self._closed = False
        lag = 0.0
        if rate is not None and delay is not None:
            lag = max(0.0, min(rate.quantum_s, delay.min_delay_s))
        self.grant_lag_s = lag

    @property
    def rate(self) -> RateStage | None:
        return self._rate

    @property
    def in_flight(self) -> int:
        """Chunks granted but not yet delivered (all flows)."""
        return len(self._heap)

    def wake(self, flow: Deliverable) -> None:
        """``flow`` got bytes, or its receiver has room again."""
        if self._closed or not flow.sendable:
            return
        rate = self._rate
        if rate is None:  # unshaped direction with a delay: everything is ready now
            now = self._clock()
            while flow.sendable:
                self._push(flow, flow.take(min(flow.pending_bytes, MAX_QUANTUM_BYTES)), now)
            if not self._running:
                self._arm()
            return
        joined = rate.add(flow, self._clock())
        if self._running or (not joined and self._handle is not None):
            return  # already waiting its turn and the timer is armed: the common case per read
        if rate.t_free <= self._clock() + IMMEDIATE_S:
            self._run(IMMEDIATE_S)
        else:
            self._arm()

    def close(self) -> None:
        """Shutdown: cancel the timer, drop everything queued."""
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._heap.clear()
        if self._rate is not None:
            self._rate.clear()

    # -- internals -----------------------------------------------------------------------------
    def _push(self, flow: Deliverable, chunk: Any, t_ready: float) -> None:
        due = self._delay.due(t_ready, flow.last_due_s) if self._delay is not None else t_ready
        flow.last_due_s = due
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, flow, chunk))

    def _fire(self) -> None:
        self._handle = None
        target, self._handle_at = self._handle_at, math.inf
        self._timer.observe(self._clock() - target)
        self._run(FIRE_SLACK_S)

    def _take_push(self, flow: Deliverable, n_bytes: int, t_ready: float) -> None:
        """A grant of the rate stage: take its bytes and queue them for their due time."""
        chunk = flow.take(n_bytes)
        delay = self._delay
        if delay is None:
            due = t_ready
        elif delay.jitter_s > 0.0:
            due = delay.due(t_ready, flow.last_due_s)
        else:  # DelayStage.due without jitter
            due = t_ready + delay.latency_s
            if due < flow.last_due_s:
                due = flow.last_due_s
        flow.last_due_s = due
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, flow, chunk))

    def _run(self, slack_s: float) -> None:
        if self._closed:
            return
        self._running = True
        try:
            heap = self._heap
            now = self._clock()
            horizon = now + slack_s
            while heap and heap[0][0] <= horizon:
                entry = heapq.heappop(heap)
                entry[2].deliver(entry[3])
            rate = self._rate
            if rate is not None and rate.grant_ready(horizon, self._take_push):
                horizon = now + IMMEDIATE_S  # anything due now (zero latency) goes out at once
                while heap and heap[0][0] <= horizon:
                    entry = heapq.heappop(heap)
                    entry[2].deliver(entry[3])
        finally:
            self._running = False
        self._arm()

    def _arm(self) -> None:
        """(Re)schedule the single timer at the earliest thing to do."""
        t_next = self._heap[0][0] if self._heap else math.inf
        rate = self._rate
        if rate is not None and rate.waiting:
            t_grant = rate.t_free + self.grant_lag_s
            if t_grant < t_next:
                t_next = t_grant
        if t_next == self._handle_at:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._handle_at = t_next
        if t_next != math.inf:
            self._handle = self._timer.call_at(t_next, self._fire)
