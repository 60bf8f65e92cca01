"""Socket plumbing of the proxy: loopback checks, capped buffers, binding, resolving, probing upstreams."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import socket
from typing import Any

from fedbw.shaper.errors import ShaperError

#: Kernel send buffer cap on proxy sockets whose peer is on this machine (Linux doubles it for
#: bookkeeping). What the proxy has written counts as delivered, so this is the queue that hides
#: after the link: 64 KiB keeps it at ≈ 35 ms at 30 Mbps while loopback still moves > 1 Gbit/s per
#: connection. Sockets to other hosts keep kernel autotuning: a real path needs buffers of its own
#: bandwidth × RTT, and there the real network is the bottleneck after the shaper.
DEFAULT_SOCK_BUF_BYTES = 64 * 1024
#: The receive buffer is this many times the send buffer. Bytes in it wait *before* the link, where
#: they change no time the proxy measures (the link grants only what it has read, and stamps bytes
#: as they leave), while each read then takes up to 256 KiB: at 32 busy links a fraction of the
#: reads (benchmarks/results/shaper-cpu.json). The sender may run that much further ahead of the link.
#: The kernel caps the request at net.core.rmem_max, which on some hosts is below 256 KiB.
RECV_BUF_FACTOR = 4


def is_loopback_host(host: str) -> bool:
    """True for 'localhost' and loopback literals (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def cap_buffers(sock: Any, buf_bytes: int | None) -> None:
    """Send buffer ``buf_bytes``, receive buffer ``RECV_BUF_FACTOR`` × that (None: kernel autotuning)."""
    if buf_bytes is None:
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, buf_bytes)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buf_bytes * RECV_BUF_FACTOR)


def peer_is_local(addr: Any) -> bool:
    return bool(addr) and is_loopback_host(str(addr[0]))


def set_nodelay(sock: Any) -> None:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:  # pragma: no cover - not TCP
        pass


def describe_exc(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "refused the connection"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "did not answer in time"
    return f"failed: {exc.__class__.__name__}: {exc}"


def resolve(host: str, port: int) -> list[tuple[Any, ...]]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ShaperError(f"cannot resolve upstream host {host!r} ({exc.strerror}); fix --upstream") from None
    return [(fam, typ, proto, addr) for fam, typ, proto, _, addr in infos]


def bind(host: str, port: int, buf_bytes: int | None) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ShaperError(f"cannot resolve listen host {host!r} ({exc.strerror}); fix --listen") from None
    family, type_, proto, _, addr = infos[0]
    sock = socket.socket(family, type_, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if is_loopback_host(str(addr[0])):
            cap_buffers(sock, buf_bytes)  # accepted sockets inherit these (window scale is set at SYN)
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
