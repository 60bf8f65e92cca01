"""Loopback servers and a loop runner shared by the shaper tests."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from fedbw.shaper import ClientRoute, LinkSpec, new_event_loop

LOOPS = ["asyncio", "uvloop"]


def run(coro_fn: Callable[[], Awaitable[Any]], loop_kind: str = "asyncio") -> Any:
    """Run ``coro_fn()`` on a fresh loop; fail if it leaves tasks behind."""
    loop = new_event_loop(use_uvloop=loop_kind == "uvloop")
    try:
        result = loop.run_until_complete(coro_fn())
        leftover = [t for t in asyncio.all_tasks(loop) if not t.done()]
        assert not leftover, f"tasks left running: {leftover}"
        return result
    finally:
        loop.close()


def route(client_id: str, upstream_port: int, link: LinkSpec, listen_port: int = 0) -> ClientRoute:
    return ClientRoute(client_id, "127.0.0.1", listen_port, "127.0.0.1", upstream_port, link)


@dataclass
class Received:
    n_bytes: int = 0
    t_first_s: float | None = None
    t_last_s: float | None = None
    data: bytearray = field(default_factory=bytearray)
    samples: list[tuple[float, int]] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)


class Sink:
    """Upstream that reads each connection to EOF (recording receiver-side times), then replies."""

    def __init__(self, reply: bytes = b"", keep: bool = False) -> None:
        self.reply = reply
        self.keep = keep
        self.conns: list[Received] = []
        self.server: asyncio.AbstractServer | None = None
        self.port = 0

    async def __aenter__(self) -> Sink:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def wait_done(self, n_conns: int, timeout_s: float = 30.0) -> list[Received]:
        """Wait until ``n_conns`` connections have arrived and reached EOF. The timeout only guards against a
        hang: generous, so that a loaded host (CI beside other jobs) is never mistaken for a broken shaper."""
        deadline = time.perf_counter() + timeout_s
        while len(self.conns) < n_conns:
            assert time.perf_counter() < deadline, f"only {len(self.conns)} of {n_conns} connections arrived"
            await asyncio.sleep(0.01)
        await asyncio.wait_for(asyncio.gather(*(c.done.wait() for c in self.conns)), deadline - time.perf_counter())
        return self.conns

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        rec = Received()
        self.conns.append(rec)
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                now = time.perf_counter()
                if rec.t_first_s is None:
                    rec.t_first_s = now
                rec.t_last_s = now
                rec.n_bytes += len(data)
                rec.samples.append((now, len(data)))
                if self.keep:
                    rec.data += data
            if self.reply:
                writer.write(self.reply)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            rec.done.set()
            writer.close()


class Echo:
    """Upstream that echoes every read back at once (for ping-pong latency)."""

    async def __aenter__(self) -> Echo:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()


async def upload(port: int, n_bytes: int, *, chunk: int = 65536, read_reply: bool = True) -> tuple[float, bytes]:
    """Send ``n_bytes`` then half-close; return (start time, reply)."""
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    payload = b"x" * chunk
    left = n_bytes
    while left > 0:
        writer.write(payload[: min(chunk, left)])
        left -= chunk
        await writer.drain()
    writer.write_eof()
    reply = await reader.read() if read_reply else b""
    writer.close()
    try:
        await writer.wait_closed()
    except (ConnectionError, OSError):
        pass
    return t0, reply


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))
