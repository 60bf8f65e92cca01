"""The shaper's links on a virtual clock: no sockets, no real time, nothing a busy host can move.

A :class:`VirtualLoop` is the clock and just enough of an event loop for the link's timer
(``PerfTimer``: ``time``, ``call_at``, ``call_later``). :func:`make_link` builds a real
:class:`~fedbw.shaper.link.Link` on it (stages, bucket, scheduler, timer as the proxy builds them), and
:class:`Conn` puts real :class:`~fedbw.shaper.pipe.Pipe` objects on a link with a fake sender and
receiver: the sender writes whenever the pipe lets it (backpressure as the proxy applies it), the
receiver stamps every chunk with the virtual time it was delivered. Running the loop jumps from one
timer to the next, each firing ``lateness()`` after its deadline (0, or a late host's timer).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fedbw.shaper import LinkSpec
from fedbw.shaper.ledger import DirStats
from fedbw.shaper.link import Link, mbps_to_bytes_per_s
from fedbw.shaper.pipe import Pipe
from fedbw.shaper.proxy import DEFAULT_QUEUE_BYTES
from fedbw.shaper.stages import DEFAULT_QUANTUM_S, FIRE_SLACK_S

#: How much before its due time the scheduler may deliver a chunk: however early its timer fires
#: (the learned lead, a loop's 1 ms grid), it delivers only what is due within the fire slack.
EARLY_S = FIRE_SLACK_S
READ_BYTES = 65536


class _Handle:
    __slots__ = ("callback", "args", "cancelled")

    def __init__(self, callback: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualLoop:
    """A virtual clock (call it for the time) with timers that fire ``lateness()`` s after their deadline."""

    def __init__(self, lateness: Callable[[], float] | None = None) -> None:
        self.t = 0.0
        self._lateness = lateness or (lambda: 0.0)
        self._heap: list[tuple[float, int, _Handle]] = []
        self._seq = 0
        self.fired = 0

    def __call__(self) -> float:
        return self.t

    def time(self) -> float:
        return self.t

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any) -> _Handle:
        handle = _Handle(callback, args)
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, handle))
        return handle

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> _Handle:
        return self.call_at(self.t + delay, callback, *args)

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> _Handle:
        return self.call_at(self.t, callback, *args)

    def run(self, until: float = math.inf, max_steps: int = 5_000_000) -> None:
        """Fire every timer due by ``until`` in deadline order (the clock never runs backwards)."""
        for _ in range(max_steps):
            if not self._heap or self._heap[0][0] > until:
                break
            when, _, handle = heapq.heappop(self._heap)
            if handle.cancelled:
                continue
            self.t = max(self.t, when + self._lateness())
            self.fired += 1
            handle.callback(*handle.args)
        else:  # pragma: no cover - a scheduler that never goes quiet
            raise AssertionError(f"still busy after {max_steps} timer callbacks")
        if until != math.inf:
            self.t = max(self.t, until)


def late_timers(max_late_s: float, seed: int = 0) -> Callable[[], float]:
    """Timer lateness of a busy host: each wake-up late by a seeded draw in [0, ``max_late_s``]."""
    rng = random.Random(seed)
    return lambda: rng.uniform(0.0, max_late_s)


def make_link(loop: VirtualLoop, spec: LinkSpec, client_id: str = "c0", *, t0_s: float = 0.0,
              quantum_s: float = DEFAULT_QUANTUM_S) -> Link:
    """A client's link as the proxy builds it, its bucket, timer and scheduler on the virtual clock."""
    return Link(client_id, spec, t0_s=t0_s, loop=loop, quantum_s=quantum_s, clock=loop)  # type: ignore[arg-type]


def quantum_bytes(mbps: float, quantum_s: float = DEFAULT_QUANTUM_S) -> float:
    """The most bytes one grant carries on a ``mbps`` link."""
    return mbps_to_bytes_per_s(mbps) * quantum_s


@dataclass
class Receiver:
    """The far end of a pipe: every write stamped with the virtual time it was delivered."""

    loop: VirtualLoop
    on_data: Callable[[bytes], None] | None = None
    writes: list[tuple[float, int]] = field(default_factory=list)
    data: bytearray = field(default_factory=bytearray)
    eof_s: float | None = None
    closing: bool = False

    def write(self, chunk: Any) -> None:
        data = bytes(chunk)
        self.writes.append((self.loop.t, len(data)))
        self.data += data
        if self.on_data is not None:
            self.on_data(data)

    def writelines(self, chunks: list[Any]) -> None:
        self.write(b"".join(bytes(c) for c in chunks))

    def is_closing(self) -> bool:
        return self.closing

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof_s = self.loop.t

    def get_write_buffer_size(self) -> int:
        return 0

    @property
    def n_bytes(self) -> int:
        return len(self.data)

    @property
    def t_last_s(self) -> float:
        return self.writes[-1][0]

    def bytes_between(self, t_from: float, t_to: float) -> int:
        return sum(n for t, n in self.writes if t_from <= t < t_to)


class Sender:
    """The near end of a pipe: writes ``payload`` in reads of up to 64 KiB whenever the pipe is not
    holding it back (pause_reading/resume_reading, as the proxy's socket would), then half-closes."""

    def __init__(self, loop: VirtualLoop, pipe: Pipe) -> None:
        self.loop = loop
        self.pipe = pipe
        self.paused = False
        self.left = b""
        self.eof = False
        self.t_done_s: float | None = None
        pipe.src = self  # type: ignore[assignment]

    def send(self, payload: bytes, *, eof: bool = True, at_s: float | None = None) -> None:
        """Queue ``payload`` for writing from ``at_s`` (default now)."""
        self.left += payload
        self.eof = eof
        self.loop.call_at(self.loop.t if at_s is None else at_s, self._pump)

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False
        self.loop.call_soon(self._pump)  # as a socket does: readable on the loop's next turn

    def _pump(self) -> None:
        while self.left and not self.paused and not self.pipe.dead:
            chunk, self.left = self.left[:READ_BYTES], self.left[READ_BYTES:]
            self.pipe.feed(memoryview(chunk))
        if not self.left and self.eof and self.t_done_s is None:
            self.t_done_s = self.loop.t
            self.pipe.feed_eof()


class Conn:
    """One connection through a link: ``up`` (client → upstream) and ``down`` pipes with their ends."""

    def __init__(self, loop: VirtualLoop, link: Link, *, queue_bytes: int = DEFAULT_QUEUE_BYTES) -> None:
        self.loop = loop
        self.finished = 0
        stats = [DirStats() for _ in range(4)]
        self.up = Pipe(link.up.scheduler, stats[0], stats[1], high_bytes=queue_bytes, low_bytes=queue_bytes // 2,
                       on_finished=self._finished)
        self.down = Pipe(link.down.scheduler, stats[2], stats[3], high_bytes=queue_bytes,
                         low_bytes=queue_bytes // 2, on_finished=self._finished)
        self.client = Sender(loop, self.up)  # writes up
        self.server = Sender(loop, self.down)  # writes down
        self.at_server = Receiver(loop)  # what the upstream reads
        self.at_client = Receiver(loop)  # what the client reads
        self.up.set_dst(self.at_server)  # type: ignore[arg-type]
        self.down.set_dst(self.at_client)  # type: ignore[arg-type]

    def _finished(self) -> None:
        self.finished += 1


def ping_pong(loop: VirtualLoop, conn: Conn, count: int, size: int = 64) -> list[float]:
    """``count`` round trips of a ``size``-byte message, the upstream echoing each at once: virtual RTTs."""
    rtts: list[float] = []
    sent_at: list[float] = []
    got = bytearray()

    def send_next() -> None:
        sent_at.append(loop.t)
        conn.client.send(bytes([len(sent_at) % 256]) * size, eof=False)

    def echo(data: bytes) -> None:
        conn.server.send(data, eof=False)

    def arrived(data: bytes) -> None:
        got.extend(data)
        if len(got) >= size:
            assert bytes(got[:size]) == bytes([len(sent_at) % 256]) * size
            del got[:size]
            rtts.append(loop.t - sent_at[-1])
            if len(rtts) < count:
                send_next()

    conn.at_server.on_data = echo
    conn.at_client.on_data = arrived
    send_next()
    loop.run()
    assert len(rtts) == count
    return rtts
