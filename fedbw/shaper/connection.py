"""One proxied TCP connection: two sockets (protocols), two pipes, one ledger record.

The client socket feeds ``Connection.up`` and receives ``Connection.down``; the upstream socket the
reverse. Reads use ``BufferedProtocol`` into the shaper's one shared 64 KiB buffer (copied into the
pipe at once), and ``pause_reading()`` for backpressure.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any, Protocol

from fedbw.shaper.ledger import ClientStats, ConnRecord, Ledger
from fedbw.shaper.link import ClientRoute, Link
from fedbw.shaper.pipe import Pipe
from fedbw.shaper.sockets import describe_exc

log = logging.getLogger("fedbw.shaper")


class ProxyHost(Protocol):
    """What a connection needs from the proxy that accepted it (:class:`fedbw.shaper.proxy.Shaper`)."""

    ledger: Ledger
    queue_bytes: int
    read_view: memoryview  #: the one shared read buffer
    accepting: bool
    connections: set[Connection]
    loop: asyncio.AbstractEventLoop

    def configure_transport(self, transport: asyncio.Transport) -> None: ...

    def spawn(self, coro: Any) -> asyncio.Task[Any]: ...

    async def open_upstream(self, client: ShapedClient) -> socket.socket: ...

    def connection_gone(self) -> None: ...


class _Side(asyncio.BufferedProtocol):
    """One socket of a proxied connection: feeds the pipe leaving it, receives the pipe entering it.

    The client socket feeds ``conn.up`` and receives ``conn.down``; the upstream socket the reverse.
    """

    def __init__(self, conn: Connection | None, is_client: bool) -> None:
        self.conn = conn
        self.is_client = is_client
        self.transport: asyncio.Transport | None = None
        self.lost = False

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.conn.shaper.read_view  # type: ignore[union-attr]

    def buffer_updated(self, nbytes: int) -> None:
        conn = self.conn
        pipe = conn.up if self.is_client else conn.down  # type: ignore[union-attr]
        pipe.feed(conn.shaper.read_view[:nbytes])  # type: ignore[union-attr]

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


class ClientSide(_Side):
    """Accepted socket: creates the connection and starts the upstream connect."""

    def __init__(self, shaper: ProxyHost, client: ShapedClient) -> None:
        super().__init__(None, True)
        self._shaper = shaper
        self._client = client

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if not self._shaper.accepting:  # accepted while stopping
            transport.abort()
            return
        self.conn = Connection(self._shaper, self._client, self, transport)  # type: ignore[arg-type]


class _UpstreamSide(_Side):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.conn.upstream_made(self, transport)  # type: ignore[union-attr,arg-type]


class ShapedClient:
    """Per-client state: route, link, ledger totals, listener."""

    __slots__ = ("route", "link", "stats", "server", "addrs")

    def __init__(self, route: ClientRoute, link: Link, stats: ClientStats, addrs: list[tuple[Any, ...]]) -> None:
        self.route = route
        self.link = link
        self.stats = stats
        self.server: asyncio.AbstractServer | None = None
        self.addrs = addrs


class Connection:
    """One proxied TCP connection: two sockets, two pipes, one ledger record."""

    __slots__ = ("shaper", "client", "rec", "up", "down", "client_side", "upstream_side", "connect_task",
                 "closing", "error", "__weakref__")

    def __init__(self, shaper: ProxyHost, client: ShapedClient, side: ClientSide,
                 transport: asyncio.Transport) -> None:
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
        shaper.configure_transport(transport)
        self.up.src = transport
        self.down.set_dst(transport)
        shaper.connections.add(self)
        self.connect_task = shaper.spawn(self._connect())

    async def _connect(self) -> None:
        shaper = self.shaper
        route = self.client.route
        try:
            sock = await shaper.open_upstream(self.client)
        except asyncio.CancelledError:
            raise
        except OSError as exc:  # includes timeouts
            self.fail(f"upstream {route.upstream_host}:{route.upstream_port} {describe_exc(exc)}")
            return
        if self.closing:
            sock.close()
            return
        try:
            await shaper.loop.create_connection(lambda: _UpstreamSide(self, False), sock=sock)
        except OSError as exc:
            sock.close()
            self.fail(f"upstream {route.upstream_host}:{route.upstream_port} {describe_exc(exc)}")
        except BaseException:  # cancelled by stop(): the socket must not outlive the shaper
            sock.close()
            raise

    def upstream_made(self, side: _UpstreamSide, transport: asyncio.Transport) -> None:
        if self.closing:
            transport.abort()
            return
        self.upstream_side = side
        self.shaper.configure_transport(transport)
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
            self.shaper.connections.discard(self)
            self.shaper.connection_gone()

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
