"""One direction of one proxied connection: sender → link scheduler (rate, delay) → receiver.

The pipe holds what was read but not yet granted by the link (``pending``) and bounds it: past
``high_bytes`` it pauses reading from the sender, at ``low_bytes`` it resumes. When the receiver's
socket is full (its transport called pause_writing) the pipe stops asking for grants, so backpressure
reaches the sender end to end. Inside the proxy a pipe therefore holds at most ``high_bytes`` + one
read (≤ the proxy's read buffer, itself ≤ ``high_bytes``, and ≤ what the capped kernel receive buffer
held) + the chunks in flight in the delay stage (≤ rate × (latency + jitter) + one quantum), plus the
receiver transport's write buffer (capped by the proxy).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from fedbw.shaper.ledger import DirStats
from fedbw.shaper.scheduler import LinkScheduler
from fedbw.shaper.stages import MAX_QUANTUM_BYTES

#: An unshaped direction with a delay has no rate to bound what is in flight; this does (like a TCP
#: window: 4 MiB over 10 ms of latency is still 3.3 Gbit/s).
UNPACED_INFLIGHT_BYTES = 4 * 1024 * 1024


class Pipe:
    """Implements the scheduler's flow interface for one direction of one connection.

    ``sendable`` and ``pending_bytes`` are plain attributes kept up to date on every change, not
    properties: the scheduler reads them several times per grant, thousands of times a second.
    """

    __slots__ = (
        "in_ring", "last_due_s", "src", "dst", "dst_paused", "src_paused", "eof_in", "finished", "dead", "_open",
        "sendable", "pending_bytes", "_chunks", "_inflight", "_inflight_bytes", "_sched", "_high", "_low",
        "_count_inflight", "_conn_stats", "_client_stats", "_on_finished",
    )

    def __init__(
        self,
        scheduler: LinkScheduler | None,
        conn_stats: DirStats,
        client_stats: DirStats,
        *,
        high_bytes: int,
        low_bytes: int,
        on_finished: Callable[[], None],
    ) -> None:
        self.in_ring = False
        self.last_due_s = float("-inf")
        self.src: asyncio.Transport | None = None
        self.dst: asyncio.Transport | None = None
        self.dst_paused = False
        self.src_paused = False
        self.eof_in = False
        self.finished = False
        self.dead = False
        self._open = False  # dst connected, not paused, pipe not dead
        self.sendable = False  #: _open and pending_bytes > 0 (the flow interface)
        self.pending_bytes = 0  #: read but not yet granted by the link
        self._chunks: deque[memoryview] = deque()
        self._inflight = 0
        self._inflight_bytes = 0
        self._sched = scheduler
        self._high = high_bytes
        self._low = low_bytes
        self._count_inflight = scheduler is not None and scheduler.rate is None
        if self._count_inflight:
            self._high = max(high_bytes, UNPACED_INFLIGHT_BYTES)
            self._low = self._high // 2
        self._conn_stats = conn_stats
        self._client_stats = client_stats
        self._on_finished = on_finished

    # -- flow interface (scheduler) --------------------------------------------------------------
    def _update_open(self) -> None:
        self._open = self.dst is not None and not self.dst_paused and not self.dead
        self.sendable = self._open and self.pending_bytes > 0

    def take(self, n_bytes: int) -> memoryview | list[memoryview]:
        """Remove the next ``n_bytes`` of pending data: one view when they lie in one read, else the
        list of views that hold them (written with one ``writelines``: no copy into a joined buffer)."""
        chunks = self._chunks
        head = chunks[0]
        size = len(head)
        out: memoryview | list[memoryview]
        if size > n_bytes:
            out = head[:n_bytes]
            chunks[0] = head[n_bytes:]
        elif size == n_bytes:
            out = chunks.popleft()
        else:
            out = []
            left = n_bytes
            while left > 0 and chunks:
                head = chunks[0]
                size = len(head)
                if size <= left:
                    out.append(chunks.popleft())
                    left -= size
                else:
                    out.append(head[:left])
                    chunks[0] = head[left:]
                    left = 0
            n_bytes -= left
        pending = self.pending_bytes - n_bytes
        self.pending_bytes = pending
        if pending <= 0:
            self.sendable = False
        self._inflight += 1
        self._inflight_bytes += n_bytes
        if self.src_paused:
            self._maybe_resume()
        return out

    def deliver(self, chunk: memoryview | list[memoryview]) -> None:
        """A granted chunk is due: write it to the receiver."""
        if chunk.__class__ is list:
            n = sum(map(len, chunk))  # type: ignore[arg-type]
        else:
            n = len(chunk)
        self._inflight -= 1
        self._inflight_bytes -= n
        if self.dead:
            return
        if self.src_paused and self._count_inflight:
            self._maybe_resume()
        dst = self.dst
        if dst is None or dst.is_closing():
            return
        if chunk.__class__ is list:
            dst.writelines(chunk)  # type: ignore[arg-type]
        else:
            dst.write(chunk)  # type: ignore[arg-type]
        now = time.perf_counter()
        self._conn_stats.add_out(n, now)
        self._client_stats.add_out(n, now)
        if self.eof_in and self._inflight == 0 and self.pending_bytes == 0:
            self._check_finished()

    # -- fed by the proxy --------------------------------------------------------------------------
    def feed(self, data: memoryview) -> None:
        """Bytes read from the sender (copied: ``data`` is the proxy's shared read buffer)."""
        n = len(data)
        now = time.perf_counter()
        self._conn_stats.add_in(n, now)
        self._client_stats.add_in(n, now)
        if self.dead:
            self._conn_stats.bytes_dropped += n
            self._client_stats.bytes_dropped += n
            return
        self._chunks.append(memoryview(bytes(data)))
        self.pending_bytes += n
        if not self.src_paused and self.src is not None and self._held() >= self._high:
            self.src_paused = True
            self.src.pause_reading()
        if self._open and self.pending_bytes > 0:
            self.sendable = True
            self._kick()

    def feed_eof(self) -> None:
        """The sender half-closed: forward the EOF once everything before it is delivered."""
        self.eof_in = True
        self._check_finished()

    def set_dst(self, transport: asyncio.Transport) -> None:
        """The receiver side is connected (the upstream connects after the client)."""
        self.dst = transport
        self._update_open()
        self._kick()
        self._check_finished()

    def set_dst_paused(self, paused: bool) -> None:
        """The receiver's transport buffer crossed its high (True) or low (False) water mark."""
        self.dst_paused = paused
        self._update_open()
        if not paused:
            self._kick()
            if self.src_paused:
                self._maybe_resume()

    def kill(self) -> int:
        """Drop everything (a side of the connection is gone); returns the bytes dropped."""
        if self.dead:
            return 0
        self.dead = True
        self._open = False
        self.sendable = False
        dropped = self.pending_bytes + self._inflight_bytes
        self._chunks.clear()
        self.pending_bytes = 0
        self._conn_stats.bytes_dropped += dropped
        self._client_stats.bytes_dropped += dropped
        return dropped

    @property
    def done(self) -> bool:
        """Nothing more will travel this way (EOF forwarded, or the pipe was killed)."""
        return self.finished or self.dead

    @property
    def buffered_bytes(self) -> int:
        """Bytes this pipe holds inside the proxy (pending + in flight; not transport buffers)."""
        return 0 if self.dead else self.pending_bytes + self._inflight_bytes

    # -- internals ---------------------------------------------------------------------------------
    def _held(self) -> int:
        """Bytes that count against ``high_bytes``: pending, and for an unpaced delay everything."""
        if not self._count_inflight:
            return self.pending_bytes
        dst = self.dst
        return self.pending_bytes + self._inflight_bytes + (dst.get_write_buffer_size() if dst is not None else 0)

    def _maybe_resume(self) -> None:
        # Not while the receiver is full: what is in flight drains into its buffer meanwhile.
        if not self.dst_paused and self.src is not None and not self.dead and self._held() <= self._low:
            self.src_paused = False
            self.src.resume_reading()

    def _kick(self) -> None:
        if not self.sendable:
            return
        if self._sched is not None:
            self._sched.wake(self)
            return
        # Neither rate nor delay in this direction: straight through, in pieces, so that a full
        # receiver (pause_writing is called from inside write) stops the flow within one piece.
        while self.sendable:
            self.deliver(self.take(min(self.pending_bytes, MAX_QUANTUM_BYTES)))

    def _check_finished(self) -> None:
        if (
            self.finished
            or self.dead
            or not self.eof_in
            or self.pending_bytes
            or self._inflight
            or self.dst is None
        ):
            return
        self.finished = True
        dst = self.dst
        if not dst.is_closing() and dst.can_write_eof():
            dst.write_eof()
        self._on_finished()
