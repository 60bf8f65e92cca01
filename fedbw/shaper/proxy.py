"""The asyncio TCP proxy: one listening port per client, wiring connections to the client's link.

The proxy only wires: sockets → :class:`~fedbw.shaper.pipe.Pipe` (one per direction) → the client's
shared :class:`~fedbw.shaper.stages.RateStage` → per-pipe delay stage → the other socket. Reads use
``BufferedProtocol`` with 64 KiB reads into one shared buffer (copied into the pipe at once), and
``pause_reading()`` for backpressure. Both proxy sockets of a connection get SO_SNDBUF/SO_RCVBUF
capped (``sock_buf_bytes``), so a throttled link cannot hide megabytes in kernel queues.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import socket
import time
from collections.abc import Sequence
from typing import Any

from fedbw.shaper.connection import ClientSide, Connection, ShapedClient
from fedbw.shaper.errors import ShaperError
from fedbw.shaper.ledger import Ledger
from fedbw.shaper.bucket import RateSchedule, TokenBucket
from fedbw.shaper.link import DIRECTIONS, ClientRoute, Link, LinkSpec, mbps_to_bytes_per_s
from fedbw.shaper.sockets import (DEFAULT_SOCK_BUF_BYTES, bind, cap_buffers, is_loopback_host, peer_is_local,
                                  probe_upstream, resolve, set_nodelay)
from fedbw.shaper.stages import SharedLink, quantum_for

log = logging.getLogger("fedbw.shaper")

#: Bytes a pipe may hold before the link grants them; reading pauses beyond this.
DEFAULT_QUEUE_BYTES = 256 * 1024
#: The one shared read buffer (capped by ``queue_bytes``). One read takes whatever a socket's receive
#: queue holds (≤ ``RECV_BUF_FACTOR`` × ``sock_buf_bytes``) instead of 64 KiB at a time: fewer reads,
#: each a system call plus a feed through the pipe and the scheduler.
READ_BYTES = 256 * 1024
#: ``queue_bytes`` below this would pause reading after every read.
MIN_QUEUE_BYTES = 64 * 1024
DEFAULT_CONNECT_TIMEOUT_S = 5.0


class Shaper:
    """Per-client shaped links on real sockets, all on one asyncio event loop.

    ``routes``: one :class:`ClientRoute` per client (unique ``client_id``). ``sock_buf_bytes`` caps
    SO_SNDBUF (and SO_RCVBUF at ``RECV_BUF_FACTOR`` × it) on every proxy socket whose peer is on this
    machine (None: no cap);
    ``queue_bytes`` bounds what a connection's direction may hold before its link grants it (reading
    from the sender pauses beyond it); ``quantum_s`` is the most link time one grant covers (None:
    :func:`~fedbw.shaper.stages.quantum_for` the number of routes);
    ``burst_bytes`` is the credit an idle link may build up (0 = every byte pays its serialization
    time). Listening on a non-loopback address needs ``allow_non_loopback=True``. With
    ``check_upstream`` start() first connects once to each upstream and fails with a clear
    :class:`ShaperError` if one is not there. ``shared_link`` is the upstream's own link: its
    ``up_mbps`` is shared by every client's uploads, its ``down_mbps`` by every client's downloads
    (payload Mbps, max-min fair between clients), on top of each client's own link.
    """

    def __init__(
        self,
        routes: Sequence[ClientRoute],
        *,
        ledger_path: str | os.PathLike[str] | None = None,
        sock_buf_bytes: int | None = DEFAULT_SOCK_BUF_BYTES,
        allow_non_loopback: bool = False,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        quantum_s: float | None = None,
        burst_bytes: int = 0,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        check_upstream: bool = False,
        shared_link: LinkSpec | None = None,
    ) -> None:
        routes = list(routes)
        if not routes:
            raise ShaperError("no client routes given; add at least one client")
        seen: set[str] = set()
        bound: set[tuple[str, int]] = set()
        for route in routes:
            if not isinstance(route, ClientRoute):
                raise ShaperError(f"routes must be ClientRoute objects, got {type(route).__name__}")
            if route.client_id in seen:
                raise ShaperError(f"client id {route.client_id!r} appears twice; give each client its own id")
            seen.add(route.client_id)
            if route.listen_port:
                key = (route.listen_host, route.listen_port)
                if key in bound:
                    raise ShaperError(
                        f"{route.listen_host}:{route.listen_port} is used by two clients; give each its own port"
                    )
                bound.add(key)
            if not allow_non_loopback and not is_loopback_host(route.listen_host):
                raise ShaperError(
                    f"client {route.client_id!r} would listen on {route.listen_host}, which is not loopback; "
                    "pass --allow-non-loopback (allow_non_loopback=True) to expose the shaper to other hosts"
                )
        if sock_buf_bytes is not None and (not isinstance(sock_buf_bytes, int) or sock_buf_bytes < 4096):
            raise ShaperError(f"sock_buf_bytes must be an integer >= 4096 (or None: no cap), got {sock_buf_bytes!r}")
        if not isinstance(queue_bytes, int) or queue_bytes < MIN_QUEUE_BYTES:
            raise ShaperError(f"queue_bytes must be an integer >= {MIN_QUEUE_BYTES}, got {queue_bytes!r}")
        if quantum_s is None:
            quantum_s = quantum_for(len(routes))
        if not (isinstance(quantum_s, (int, float)) and 0 < quantum_s <= 1):
            raise ShaperError(f"quantum_s must be in (0, 1] s, got {quantum_s!r}")
        if not (isinstance(connect_timeout_s, (int, float)) and connect_timeout_s > 0):
            raise ShaperError(f"connect_timeout_s must be > 0, got {connect_timeout_s!r}")
        self.routes = routes
        self.sock_buf_bytes = sock_buf_bytes
        self.queue_bytes = queue_bytes
        self.quantum_s = float(quantum_s)
        self.burst_bytes = burst_bytes
        self.connect_timeout_s = float(connect_timeout_s)
        self.check_upstream = check_upstream
        if shared_link is not None and not isinstance(shared_link, LinkSpec):
            raise ShaperError(f"shared_link must be a LinkSpec, got {type(shared_link).__name__}")
        self.shared_link = shared_link
        self.allow_non_loopback = allow_non_loopback
        self.ledger = Ledger([r.client_id for r in routes], path=ledger_path)
        self.ports: dict[str, int] = {}
        self.t0_s: float | None = None
        self.clients: dict[str, ShapedClient] = {}
        self.connections: set[Connection] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self._read_buf = bytearray(min(READ_BYTES, queue_bytes))
        self.read_view = memoryview(self._read_buf)
        self._state = "new"
        self.accepting = False
        self._all_gone: asyncio.Future[None] | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        """Resolve upstreams, bind every listening port, then accept. Raises ShaperError."""
        if self._state != "new":
            raise ShaperError("a Shaper can be started once; create a new one")
        self._state = "starting"
        self.loop = asyncio.get_running_loop()
        try:
            resolved = []
            for route in self.routes:
                addrs = resolve(route.upstream_host, route.upstream_port)
                if self.check_upstream:
                    await probe_upstream(route.upstream_host, route.upstream_port,
                                         timeout_s=min(self.connect_timeout_s, 2.0))
                resolved.append((route, addrs))
            self.t0_s = time.perf_counter()
            shared = self._shared_buckets()
            for route, addrs in resolved:
                link = Link(route.client_id, route.link, t0_s=self.t0_s, loop=self.loop,
                            quantum_s=self.quantum_s, burst_bytes=self.burst_bytes, shared=shared)
                self.clients[route.client_id] = ShapedClient(route, link, self.ledger.clients[route.client_id], addrs)
            self.accepting = True
            for client in self.clients.values():
                await self._listen(client)
        except BaseException:
            await self._teardown()
            self._state = "stopped"
            raise
        self.ledger.open_file({
            "clients": {cid: {"listen": f"{c.route.listen_host}:{self.ports[cid]}",
                              "upstream": f"{c.route.upstream_host}:{c.route.upstream_port}",
                              "link": c.route.link.to_dict()}
                        for cid, c in self.clients.items()},
            "shared_link": None if self.shared_link is None else self.shared_link.to_dict(),
        })
        self._state = "running"

    async def stop(self) -> None:
        """Close listeners and every connection, cancel all tasks and timers, flush the ledger."""
        if self._state in ("new", "stopped"):
            self._state = "stopped"
            return
        self._state = "stopping"
        await self._teardown()
        self.ledger.close()
        self._state = "stopped"

    async def __aenter__(self) -> Shaper:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def running(self) -> bool:
        return self._state == "running"

    def snapshot(self) -> dict[str, Any]:
        """Ledger snapshot plus the bound ports (plain dicts)."""
        snap = self.ledger.snapshot()
        snap["ports"] = dict(self.ports)
        return snap

    def buffered_bytes(self) -> int:
        """Bytes held inside the proxy right now (pipes + transport write buffers): for memory checks."""
        return sum(c.buffered_bytes for c in self.connections)

    @property
    def open_connections(self) -> int:
        return len(self.connections)

    # -- internals -------------------------------------------------------------------------------
    def _shared_buckets(self) -> dict[str, SharedLink]:
        """One bucket per direction of the upstream's own link, booked by every client's quanta."""
        if self.shared_link is None:
            return {}
        return {d: SharedLink(TokenBucket(RateSchedule(mbps_to_bytes_per_s(self.shared_link.rate_mbps(d))),
                                          start_s=self.t0_s))
                for d in DIRECTIONS if self.shared_link.rate_mbps(d) != math.inf}

    def anchor_traces(self, t0_s: float | None = None) -> float:
        """Every traced link follows its trace from ``t0_s`` (default: now, on the shaper's clock) on:
        :mod:`fedbw.shaper.anchor`. Returns the anchor."""
        t0 = time.perf_counter() if t0_s is None else t0_s
        for client in self.clients.values():
            client.link.anchor_traces(t0)
        return t0

    async def _listen(self, client: ShapedClient) -> None:
        route = client.route
        sock = bind(route.listen_host, route.listen_port, self.sock_buf_bytes)
        try:
            client.server = await self.loop.create_server(lambda: ClientSide(self, client), sock=sock)
        except BaseException:
            sock.close()
            raise
        self.ports[route.client_id] = sock.getsockname()[1]

    async def _teardown(self) -> None:
        self.accepting = False
        for client in self.clients.values():
            if client.server is not None:
                client.server.close()
        for conn in list(self.connections):
            conn.abort("shaper stopped")
        for client in self.clients.values():
            client.link.close()
        tasks = [t for t in self._tasks if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self.connections:
            self._all_gone = self.loop.create_future()
            try:
                await asyncio.wait_for(self._all_gone, 2.0)
            except TimeoutError:  # pragma: no cover - a transport that never reports lost
                log.warning("shaper stop: %d connections did not close in 2 s", len(self.connections))
            self._all_gone = None
        for client in self.clients.values():
            if client.server is not None:
                await client.server.wait_closed()
                client.server = None

    def connection_gone(self) -> None:
        if not self.connections and self._all_gone is not None and not self._all_gone.done():
            self._all_gone.set_result(None)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def configure_transport(self, transport: asyncio.Transport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                if peer_is_local(transport.get_extra_info("peername")):
                    cap_buffers(sock, self.sock_buf_bytes)
                set_nodelay(sock)
            except OSError:  # pragma: no cover - socket already gone
                pass
        limit = self.sock_buf_bytes or DEFAULT_SOCK_BUF_BYTES
        transport.set_write_buffer_limits(high=limit, low=limit // 4)

    async def open_upstream(self, client: ShapedClient) -> socket.socket:
        """A connected non-blocking socket to the client's upstream, buffers capped before connect."""
        last_exc: OSError | None = None
        for family, type_, proto, addr in client.addrs:
            sock = socket.socket(family, type_, proto)
            try:
                sock.setblocking(False)
                if peer_is_local(addr):  # before connect: the window scale is fixed at SYN
                    cap_buffers(sock, self.sock_buf_bytes)
                set_nodelay(sock)
                await asyncio.wait_for(self.loop.sock_connect(sock, addr), self.connect_timeout_s)
                return sock
            except TimeoutError:
                sock.close()
                last_exc = TimeoutError(f"no answer in {self.connect_timeout_s:g} s")
            except OSError as exc:
                sock.close()
                last_exc = exc
            except BaseException:
                sock.close()
                raise
        assert last_exc is not None
        raise last_exc


__all__ = ["DEFAULT_SOCK_BUF_BYTES", "Shaper", "is_loopback_host", "probe_upstream"]
