"""The asyncio TCP proxy: one listening port per client, wiring connections to the client's link.

The proxy only wires: sockets → :class:`~fedbw.shaper.pipe.Pipe` (one per direction) → the client's
shared :class:`~fedbw.shaper.stages.RateStage` → per-pipe delay stage → the other socket. Reads use
``BufferedProtocol`` with 64 KiB reads into one shared buffer (copied into the pipe at once), and
``pause_reading()`` for backpressure. Both proxy sockets of a connection get SO_SNDBUF/SO_RCVBUF
capped (``sock_buf_bytes``), so a throttled link cannot hide megabytes in kernel queues.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import math
import os
import socket
import time
from collections.abc import Sequence
from typing import Any

from fedbw.shaper.errors import ShaperError
from fedbw.shaper.ledger import ClientStats, ConnRecord, Ledger
from fedbw.shaper.link import ClientRoute, Link
from fedbw.shaper.pipe import Pipe
from fedbw.shaper.stages import DEFAULT_QUANTUM_S

log = logging.getLogger("fedbw.shaper")

#: Kernel socket buffer cap on proxy sockets whose peer is on this machine (Linux doubles it for
#: bookkeeping). 64 KiB keeps the hidden queue at ≈ 35 ms at 30 Mbps while loopback still moves
#: > 1 Gbit/s per connection. Sockets to other hosts keep kernel autotuning: a real path needs
#: buffers of its own bandwidth × RTT, and there the real network is the bottleneck after the shaper.
DEFAULT_SOCK_BUF_BYTES = 64 * 1024
#: Bytes a pipe may hold before the link grants them; reading pauses beyond this.
DEFAULT_QUEUE_BYTES = 256 * 1024
READ_BYTES = 64 * 1024
DEFAULT_CONNECT_TIMEOUT_S = 5.0


def is_loopback_host(host: str) -> bool:
    """True for 'localhost' and loopback literals (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _cap_buffers(sock: Any, buf_bytes: int | None) -> None:
    if buf_bytes is None:
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, buf_bytes)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buf_bytes)


def _peer_is_local(addr: Any) -> bool:
    return bool(addr) and is_loopback_host(str(addr[0]))


def _set_nodelay(sock: Any) -> None:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:  # pragma: no cover - not TCP
        pass


def _describe_exc(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "refused the connection"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "did not answer in time"
    return f"failed: {exc.__class__.__name__}: {exc}"


class _Side(asyncio.BufferedProtocol):
    """One socket of a proxied connection: feeds the pipe leaving it, receives the pipe entering it.

    The client socket feeds ``conn.up`` and receives ``conn.down``; the upstream socket the reverse.
    """

    def __init__(self, conn: _Conn | None, is_client: bool) -> None:
        self.conn = conn
        self.is_client = is_client
        self.transport: asyncio.Transport | None = None
        self.lost = False

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.conn.shaper._read_mv  # type: ignore[union-attr]

    def buffer_updated(self, nbytes: int) -> None:
        conn = self.conn
        pipe = conn.up if self.is_client else conn.down  # type: ignore[union-attr]
        pipe.feed(conn.shaper._read_mv[:nbytes])  # type: ignore[union-attr]

    def eof_received(self) -> bool:
        conn = self.conn
        (conn.up if self.is_client else conn.down).feed_eof()  # type: ignore[union-attr]
        return True  # keep the other direction open (half-close)

    def pause_writing(self) -> None:
        conn = self.conn
        (conn.down if self.is_client else conn.up).set_dst_paused(True)  # type: ignore[union-attr]

    def resume_writing(self) -> None:
        conn = self.conn
        (conn.down if self.is_client else conn.up).set_dst_paused(False)  # type: ignore[union-attr]

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.conn is not None:
            self.conn.side_lost(self, exc)


class _ClientSide(_Side):
    """Accepted socket: creates the connection and starts the upstream connect."""

    def __init__(self, shaper: Shaper, client: _Client) -> None:
        super().__init__(None, True)
        self._shaper = shaper
        self._client = client

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if not self._shaper._accepting:  # accepted while stopping
            transport.abort()
            return
        self.conn = _Conn(self._shaper, self._client, self, transport)  # type: ignore[arg-type]


class _UpstreamSide(_Side):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.conn.upstream_made(self, transport)  # type: ignore[union-attr,arg-type]


class _Client:
    """Per-client state: route, link, ledger totals, listener."""

    __slots__ = ("route", "link", "stats", "server", "addrs")

    def __init__(self, route: ClientRoute, link: Link, stats: ClientStats, addrs: list[tuple[Any, ...]]) -> None:
        self.route = route
        self.link = link
        self.stats = stats
        self.server: asyncio.AbstractServer | None = None
        self.addrs = addrs


class _Conn:
    """One proxied TCP connection: two sockets, two pipes, one ledger record."""

    __slots__ = ("shaper", "client", "rec", "up", "down", "client_side", "upstream_side", "connect_task",
                 "closing", "error", "__weakref__")

    def __init__(self, shaper: Shaper, client: _Client, side: _ClientSide, transport: asyncio.Transport) -> None:
        self.shaper = shaper
        self.client = client
        self.client_side = side
        self.upstream_side: _UpstreamSide | None = None
        self.closing = False
        self.error: str | None = None
        peer = transport.get_extra_info("peername")
        self.rec: ConnRecord = shaper.ledger.open_connection(
            client.route.client_id, f"{peer[0]}:{peer[1]}" if peer else "?"
        )
        high, low = shaper.queue_bytes, shaper.queue_bytes // 2
        self.up = Pipe(client.link.up.scheduler, self.rec.up, client.stats.up, high_bytes=high, low_bytes=low,
                       on_finished=self._maybe_close)
        self.down = Pipe(client.link.down.scheduler, self.rec.down, client.stats.down, high_bytes=high, low_bytes=low,
                         on_finished=self._maybe_close)
        shaper._configure_transport(transport)
        self.up.src = transport
        self.down.set_dst(transport)
        shaper._conns.add(self)
        self.connect_task = shaper._spawn(self._connect())

    async def _connect(self) -> None:
        shaper = self.shaper
        route = self.client.route
        try:
            sock = await shaper._open_upstream(self.client)
        except asyncio.CancelledError:
            raise
        except OSError as exc:  # includes timeouts
            self.fail(f"upstream {route.upstream_host}:{route.upstream_port} {_describe_exc(exc)}")
            return
        if self.closing:
            sock.close()
            return
        try:
            await shaper._loop.create_connection(lambda: _UpstreamSide(self, False), sock=sock)
        except OSError as exc:
            sock.close()
            self.fail(f"upstream {route.upstream_host}:{route.upstream_port} {_describe_exc(exc)}")
        except BaseException:  # cancelled by stop(): the socket must not outlive the shaper
            sock.close()
            raise

    def upstream_made(self, side: _UpstreamSide, transport: asyncio.Transport) -> None:
        if self.closing:
            transport.abort()
            return
        self.upstream_side = side
        self.shaper._configure_transport(transport)
        self.down.src = transport
        self.up.set_dst(transport)

    def _kill_both(self) -> None:
        """Stop both pipes and abort both sockets (shared by an error and by shutdown)."""
        self.closing = True
        self.up.kill()
        self.down.kill()
        for side in (self.client_side, self.upstream_side):
            if side is not None and side.transport is not None and not side.lost:
                side.transport.abort()

    def fail(self, error: str) -> None:
        """Abort both sides: an error on this connection, never on anyone else's."""
        if self.error is None:
            self.error = error
            log.warning("client %s connection %d: %s", self.client.route.client_id, self.rec.conn_id, error)
        self._kill_both()
        self._maybe_finalize()

    def side_lost(self, side: _Side, exc: Exception | None) -> None:
        to_side, from_side = (self.down, self.up) if side.is_client else (self.up, self.down)
        lost_early = not to_side.done
        to_side.kill()
        if exc is not None:
            who = "client" if side.is_client else "upstream"
            self.fail(f"{who} connection lost: {exc.__class__.__name__}: {exc}")
            return
        if lost_early and not self.closing:
            # Closed under us without a reset: deliver what it sent, then close the other side.
            from_side.feed_eof()
        self._maybe_close()
        self._maybe_finalize()

    def _maybe_close(self) -> None:
        """Both directions finished (EOF forwarded or nothing left to deliver): close both sockets."""
        if not (self.up.done and self.down.done):
            return
        self.closing = True
        for side in (self.client_side, self.upstream_side):
            if side is not None and side.transport is not None and not side.lost:
                side.transport.close()
        self._maybe_finalize()

    def _maybe_finalize(self) -> None:
        if not self.client_side.lost:
            return
        if self.upstream_side is not None and not self.upstream_side.lost:
            return
        if self.upstream_side is None and not self.connect_task.done() and not self.closing:
            return
        if self.rec.closed_s is None:
            self.shaper.ledger.close_connection(self.rec, self.error)
            self.shaper._conns.discard(self)
            self.shaper._conn_gone()

    def abort(self, reason: str) -> None:
        """Shutdown: drop everything without recording it as the connection's own error."""
        self._kill_both()
        if self.rec.error is None and not (self.up.finished and self.down.finished):
            self.rec.error = reason

    @property
    def buffered_bytes(self) -> int:
        total = self.up.buffered_bytes + self.down.buffered_bytes
        for side in (self.client_side, self.upstream_side):
            if side is not None and side.transport is not None and not side.lost:
                total += side.transport.get_write_buffer_size()
        return total


class Shaper:
    """Per-client shaped links on real sockets, all on one asyncio event loop.

    ``routes``: one :class:`ClientRoute` per client (unique ``client_id``). ``sock_buf_bytes`` caps
    SO_SNDBUF/SO_RCVBUF on every proxy socket whose peer is on this machine (None: no cap);
    ``queue_bytes`` bounds what a connection's direction may hold before its link grants it (reading
    from the sender pauses beyond it); ``quantum_s`` is the most link time one grant covers;
    ``burst_bytes`` is the credit an idle link may build up (0 = every byte pays its serialization
    time). Listening on a non-loopback address needs ``allow_non_loopback=True``. With
    ``check_upstream`` start() first connects once to each upstream and fails with a clear
    :class:`ShaperError` if one is not there.
    """

    def __init__(
        self,
        routes: Sequence[ClientRoute],
        *,
        ledger_path: str | os.PathLike[str] | None = None,
        sock_buf_bytes: int | None = DEFAULT_SOCK_BUF_BYTES,
        allow_non_loopback: bool = False,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        quantum_s: float = DEFAULT_QUANTUM_S,
        burst_bytes: int = 0,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        check_upstream: bool = False,
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
        if not isinstance(queue_bytes, int) or queue_bytes < READ_BYTES:
            raise ShaperError(f"queue_bytes must be an integer >= {READ_BYTES}, got {queue_bytes!r}")
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
        self.allow_non_loopback = allow_non_loopback
        self.ledger = Ledger([r.client_id for r in routes], path=ledger_path)
        self.ports: dict[str, int] = {}
        self.t0_s: float | None = None
        self._clients: dict[str, _Client] = {}
        self._conns: set[_Conn] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self._read_buf = bytearray(READ_BYTES)
        self._read_mv = memoryview(self._read_buf)
        self._state = "new"
        self._accepting = False
        self._all_gone: asyncio.Future[None] | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        """Resolve upstreams, bind every listening port, then accept. Raises ShaperError."""
        if self._state != "new":
            raise ShaperError("a Shaper can be started once; create a new one")
        self._state = "starting"
        self._loop = asyncio.get_running_loop()
        try:
            resolved = []
            for route in self.routes:
                addrs = _resolve(route.upstream_host, route.upstream_port)
                if self.check_upstream:
                    await probe_upstream(route.upstream_host, route.upstream_port,
                                         timeout_s=min(self.connect_timeout_s, 2.0))
                resolved.append((route, addrs))
            self.t0_s = time.perf_counter()
            for route, addrs in resolved:
                link = Link(route.client_id, route.link, t0_s=self.t0_s, loop=self._loop,
                            quantum_s=self.quantum_s, burst_bytes=self.burst_bytes)
                self._clients[route.client_id] = _Client(route, link, self.ledger.clients[route.client_id], addrs)
            self._accepting = True
            for client in self._clients.values():
                await self._listen(client)
        except BaseException:
            await self._teardown()
            self._state = "stopped"
            raise
        self.ledger.open_file({
            "clients": {cid: {"listen": f"{c.route.listen_host}:{self.ports[cid]}",
                              "upstream": f"{c.route.upstream_host}:{c.route.upstream_port}",
                              "link": _spec_dict(c.route.link)}
                        for cid, c in self._clients.items()},
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
        return sum(c.buffered_bytes for c in self._conns)

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    # -- internals -------------------------------------------------------------------------------
    async def _listen(self, client: _Client) -> None:
        route = client.route
        sock = _bind(route.listen_host, route.listen_port, self.sock_buf_bytes)
        try:
            client.server = await self._loop.create_server(lambda: _ClientSide(self, client), sock=sock)
        except BaseException:
            sock.close()
            raise
        self.ports[route.client_id] = sock.getsockname()[1]

    async def _teardown(self) -> None:
        self._accepting = False
        for client in self._clients.values():
            if client.server is not None:
                client.server.close()
        for conn in list(self._conns):
            conn.abort("shaper stopped")
        for client in self._clients.values():
            client.link.close()
        tasks = [t for t in self._tasks if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._conns:
            self._all_gone = self._loop.create_future()
            try:
                await asyncio.wait_for(self._all_gone, 2.0)
            except TimeoutError:  # pragma: no cover - a transport that never reports lost
                log.warning("shaper stop: %d connections did not close in 2 s", len(self._conns))
            self._all_gone = None
        for client in self._clients.values():
            if client.server is not None:
                await client.server.wait_closed()
                client.server = None

    def _conn_gone(self) -> None:
        if not self._conns and self._all_gone is not None and not self._all_gone.done():
            self._all_gone.set_result(None)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _configure_transport(self, transport: asyncio.Transport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                if _peer_is_local(transport.get_extra_info("peername")):
                    _cap_buffers(sock, self.sock_buf_bytes)
                _set_nodelay(sock)
            except OSError:  # pragma: no cover - socket already gone
                pass
        limit = self.sock_buf_bytes or DEFAULT_SOCK_BUF_BYTES
        transport.set_write_buffer_limits(high=limit, low=limit // 4)

    async def _open_upstream(self, client: _Client) -> socket.socket:
        """A connected non-blocking socket to the client's upstream, buffers capped before connect."""
        last_exc: OSError | None = None
        for family, type_, proto, addr in client.addrs:
            sock = socket.socket(family, type_, proto)
            try:
                sock.setblocking(False)
                if _peer_is_local(addr):  # before connect: the window scale is fixed at SYN
                    _cap_buffers(sock, self.sock_buf_bytes)
                _set_nodelay(sock)
                await asyncio.wait_for(self._loop.sock_connect(sock, addr), self.connect_timeout_s)
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


def _spec_dict(spec: Any) -> dict[str, Any]:
    d = dict(spec.__dict__)
    for key in ("up_mbps", "down_mbps"):
        if d[key] == math.inf:
            d[key] = None  # JSON has no inf; null = unshaped
    return d


def _resolve(host: str, port: int) -> list[tuple[Any, ...]]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ShaperError(f"cannot resolve upstream host {host!r} ({exc.strerror}); fix --upstream") from None
    return [(fam, typ, proto, addr) for fam, typ, proto, _, addr in infos]


def _bind(host: str, port: int, buf_bytes: int | None) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ShaperError(f"cannot resolve listen host {host!r} ({exc.strerror}); fix --listen") from None
    family, type_, proto, _, addr = infos[0]
    sock = socket.socket(family, type_, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if is_loopback_host(str(addr[0])):
            _cap_buffers(sock, buf_bytes)  # accepted sockets inherit these (window scale is set at SYN)
        sock.bind(addr)
        sock.listen(512)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ShaperError(f"{host}:{port} is already in use; pick another --listen port") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise ShaperError(f"{host}:{port} is not an address of this machine; fix --listen") from None
        if exc.errno == errno.EACCES:
            raise ShaperError(f"{host}:{port} needs privileges to bind; use a port above 1023") from None
        raise ShaperError(f"cannot listen on {host}:{port}: {exc.strerror}; fix --listen") from None
    return sock


async def probe_upstream(host: str, port: int, *, timeout_s: float = 2.0) -> None:
    """Connect once to ``host:port`` and close; raise ShaperError saying what to fix if that fails."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except ConnectionRefusedError:
        raise ShaperError(
            f"upstream {host}:{port} refused the connection; start the service first or fix --upstream"
        ) from None
    except TimeoutError:
        raise ShaperError(
            f"upstream {host}:{port} did not answer within {timeout_s:g} s; "
            "check the address and firewall or fix --upstream"
        ) from None
    except socket.gaierror as exc:
        raise ShaperError(f"cannot resolve upstream host {host!r} ({exc.strerror}); fix --upstream") from None
    except OSError as exc:
        raise ShaperError(f"upstream {host}:{port} is unreachable ({exc.strerror or exc}); fix --upstream") from None
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass
