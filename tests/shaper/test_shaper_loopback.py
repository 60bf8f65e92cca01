"""Real loopback transfers through the shaper: what arrives, in what order, with what errors.

Time is asserted only one way: a shaped transfer is never faster than its link (less the scheduler's
timer grid, ``EARLY_S``), which host load cannot break, since a busy host only makes things later. How
closely the timing follows the link is asserted on a virtual clock (test_shaper_virtual.py: rate,
latency, jitter, round robin, traces) and measured on real sockets by benchmarks/shaper.py (goodput,
0.5 s windows, added latency).
"""

from __future__ import annotations

import asyncio
import gc
import math
import socket
import struct
import time

import pytest

from fedbw.shaper import ClientRoute, LinkSpec, Shaper, ShaperError
from fedbw.shaper.link import mbps_to_bytes_per_s
from tests.shaper.helpers import LOOPS, Echo, Sink, open_fds, route, run, upload
from tests.shaper.virtual import EARLY_S

MB = 1_000_000


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_upload_rate_at_receiver(loop_kind):
    async def main():
        async with Sink(reply=b"done") as sink, Shaper([route("c0", sink.port, LinkSpec(8, 100))]) as shaper:
            t0, reply = await upload(shaper.ports["c0"], MB)
            rec = sink.conns[0]
            assert reply == b"done" and rec.n_bytes == MB
            return rec.t_last_s - t0

    elapsed = run(main, loop_kind)
    assert elapsed >= 1.0 - EARLY_S  # shaped: 1 MB at 8 Mbps of payload takes 1 s at least


def test_download_rate_at_receiver():
    async def main():
        async with Sink(reply=b"y" * MB) as sink, Shaper([route("c0", sink.port, LinkSpec(100, 8))]) as shaper:
            t0 = time.perf_counter()
            reader, writer = await asyncio.open_connection("127.0.0.1", shaper.ports["c0"])
            writer.write_eof()
            n = 0
            while data := await reader.read(65536):
                n += len(data)
            elapsed = time.perf_counter() - t0
            writer.close()
            return n, elapsed

    n, elapsed = run(main)
    assert n == MB
    assert elapsed >= 1.0 - EARLY_S  # the download direction is shaped at its own 8 Mbps


async def _ping_rtts(port: int, count: int) -> list[float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    rtts = []
    for i in range(count):
        msg = struct.pack("!I", i) * 16
        t0 = time.perf_counter()
        writer.write(msg)
        got = await reader.readexactly(len(msg))
        rtts.append(time.perf_counter() - t0)
        assert got == msg
    writer.close()
    return rtts


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_added_latency_ping_pong(loop_kind):
    async def main():
        link = LinkSpec(30, 100, latency_up_ms=50, latency_down_ms=20)
        async with Echo() as echo, Shaper([route("c0", echo.port, link)]) as shaper:
            return await _ping_rtts(shaper.ports["c0"], 12)

    rtts = run(main, loop_kind)
    # never below the 70 ms the link adds (each way a delivery may be up to EARLY_S early); late by
    # however much a busy host adds, which is the benchmark's to measure, not this test's
    assert len(rtts) == 12 and min(rtts) >= 0.070 - 2 * EARLY_S


def test_jitter_stays_in_bounds_and_keeps_byte_order():
    async def main():
        link = LinkSpec(100, 100, latency_up_ms=20, jitter_up_ms=10, latency_down_ms=0, seed=3)
        async with Echo() as echo, Sink(keep=True) as sink, Shaper(
            [route("p", echo.port, link), route("bulk", sink.port, link)]
        ) as shaper:
            rtts = await _ping_rtts(shaper.ports["p"], 20)
            payload = b"".join(struct.pack("!I", i) for i in range(60_000))  # 240 kB, each chunk jittered
            await upload(shaper.ports["bulk"], 0, read_reply=False)  # an empty connection is fine too
            reader, writer = await asyncio.open_connection("127.0.0.1", shaper.ports["bulk"])
            writer.write(payload)
            writer.write_eof()
            await reader.read()
            writer.close()
            await sink.conns[-1].done.wait()
            return rtts, bytes(sink.conns[-1].data), payload

    rtts, got, sent = run(main)
    assert got == sent  # every chunk jittered on its own, the byte stream still in order
    assert len(rtts) == 20 and min(rtts) >= 0.010 - EARLY_S  # never below latency - jitter


def test_connections_of_one_client_share_its_link():
    async def main():
        async with Sink() as sink, Shaper([route("c0", sink.port, LinkSpec(8, 100))]) as shaper:
            port = shaper.ports["c0"]
            starts = await asyncio.gather(*(upload(port, MB // 2, read_reply=False) for _ in range(2)))
            await sink.wait_done(2)
            t0 = min(s for s, _ in starts)
            return [c.t_last_s - t0 for c in sink.conns], [c.n_bytes for c in sink.conns]

    ends, n_bytes = run(main)
    assert n_bytes == [MB // 2, MB // 2]
    assert max(ends) >= 1.0 - EARLY_S  # the aggregate is held to the one link's rate (round robin: virtual clock)


def test_clients_have_their_own_links_and_ledger_totals():
    async def main():
        async with Sink() as sink, Shaper(
            [route("a", sink.port, LinkSpec(8, 100)), route("b", sink.port, LinkSpec(8, 100))]
        ) as shaper:
            starts = await asyncio.gather(
                upload(shaper.ports["a"], MB // 2, read_reply=False),
                upload(shaper.ports["b"], MB // 2, read_reply=False),
            )
            await sink.wait_done(2)
            await asyncio.sleep(0.05)
            t0 = min(s for s, _ in starts)
            snap = shaper.snapshot()
            return [c.t_last_s - t0 for c in sink.conns], snap

    ends, snap = run(main)
    for end in ends:
        assert end >= 0.5 - EARLY_S  # each shaped at 8 Mbps (that they do not share a bucket: virtual clock)
    assert snap["clients"]["a"]["up"]["bytes_out"] == MB // 2 == snap["clients"]["b"]["up"]["bytes_out"]


def test_half_close_forwarded_both_ways():
    async def main():
        link = LinkSpec(50, 50, latency_up_ms=5, latency_down_ms=5)
        async with Sink(reply=b"r" * 100_000) as sink, Shaper([route("c0", sink.port, link)]) as shaper:
            _, reply = await upload(shaper.ports["c0"], 100_000)
            await asyncio.sleep(0.05)
            snap = shaper.snapshot()
            return reply, sink.conns[0].n_bytes, snap

    reply, n_up, snap = run(main)
    assert n_up == 100_000 and len(reply) == 100_000
    (conn,) = snap["connections"]
    assert conn["error"] is None and conn["closed_s"] is not None
    assert conn["up"]["bytes_out"] == 100_000 and conn["down"]["bytes_out"] == 100_000
    # out times follow in times by the one-way latency (5 ms) at least
    assert conn["up"]["first_out_s"] - conn["up"]["first_in_s"] >= 0.005


def test_client_vanishing_mid_transfer_leaves_others_alone():
    async def main():
        async with Sink() as sink, Shaper(
            [route("gone", sink.port, LinkSpec(8, 8)), route("ok", sink.port, LinkSpec(8, 8))]
        ) as shaper:
            good = asyncio.ensure_future(upload(shaper.ports["ok"], MB // 2, read_reply=False))
            sock = socket.create_connection(("127.0.0.1", shaper.ports["gone"]))
            sock.setblocking(False)
            try:
                sock.send(b"z" * 200_000)
            except BlockingIOError:
                pass
            await asyncio.sleep(0.2)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # RST mid-transfer
            t0, _ = await good
            await sink.wait_done(2)
            ok_conn = max(sink.conns, key=lambda c: c.n_bytes)
            await asyncio.sleep(0.05)
            return ok_conn.t_last_s - t0, ok_conn.n_bytes, shaper.snapshot()

    elapsed, n, snap = run(main)
    assert n == MB // 2
    assert elapsed >= 0.5 - EARLY_S  # still shaped
    by_client = {c["client_id"]: c for c in snap["connections"]}
    assert by_client["gone"]["error"] and "client" in by_client["gone"]["error"]
    assert by_client["ok"]["error"] is None
    assert snap["clients"]["gone"]["connections_failed"] == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_upstream_refusing_closes_client_cleanly():
    async def main():
        dead = _closed_port()
        async with Sink(reply=b"ok") as sink, Shaper(
            [route("bad", dead, LinkSpec(8, 8)), route("good", sink.port, LinkSpec(8, 8))]
        ) as shaper:
            reader, writer = await asyncio.open_connection("127.0.0.1", shaper.ports["bad"])
            writer.write(b"hello")
            try:
                data = await asyncio.wait_for(reader.read(), 2.0)
            except ConnectionError:
                data = b""
            writer.close()
            _, reply = await upload(shaper.ports["good"], 1000)
            await asyncio.sleep(0.05)
            return data, reply, shaper.snapshot(), dead

    data, reply, snap, dead = run(main)
    assert data == b"" and reply == b"ok"
    bad = [c for c in snap["connections"] if c["client_id"] == "bad"][0]
    assert bad["error"] == f"upstream 127.0.0.1:{dead} refused the connection"


def test_start_errors_are_clear(monkeypatch):
    real_getaddrinfo = socket.getaddrinfo

    def fake_getaddrinfo(host, *args, **kwargs):  # no DNS query leaves the machine
        if host == "no-such-host.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)

    async def main():
        dead = _closed_port()
        with pytest.raises(ShaperError, match=f"upstream 127.0.0.1:{dead} refused the connection; start the service"):
            await Shaper([route("c", dead, LinkSpec(8, 8))], check_upstream=True).start()
        async with Sink() as sink:
            with socket.socket() as busy:
                busy.bind(("127.0.0.1", 0))
                busy.listen()
                port = busy.getsockname()[1]
                shaper = Shaper([route("a", sink.port, LinkSpec(8, 8)), route("b", sink.port, LinkSpec(8, 8), port)])
                busy_msg = f"127.0.0.1:{port} is already in use; pick another --listen port"
                with pytest.raises(ShaperError, match=busy_msg):
                    await shaper.start()
                assert not shaper.ports.get("b")
        with pytest.raises(ShaperError, match="cannot resolve upstream host"):
            await Shaper([ClientRoute("x", "127.0.0.1", 0, "no-such-host.invalid", 80, LinkSpec(8, 8))]).start()

    run(main)


def test_rate_trace_steps_and_link_down():
    """16 Mbps, down from 0.3 s to 0.6 s after start, then 16 Mbps again: at every moment the receiver has
    had at most what the trace lets through by then (nothing more while the link is down), and bytes flow
    again once it is back. How many bytes each period carries: test_shaper_virtual.py."""
    down_s, up_s = 0.3, 0.6
    rate = mbps_to_bytes_per_s(16)

    def allowed(t):  # what the trace carries from the shaper's start to t
        return rate * (min(t, down_s) + max(0.0, t - up_s))

    async def main():
        link = LinkSpec(16, 100, up_trace=((down_s, 0), (up_s, 16)))
        async with Sink() as sink, Shaper([route("c0", sink.port, link)]) as shaper:
            t0 = shaper.t0_s
            task = asyncio.ensure_future(upload(shaper.ports["c0"], 10 * MB, read_reply=False))
            # until more has arrived than the link could carry before it went down: it came back (the
            # deadline only guards against a hang; a busy host just takes longer to get there)
            deadline = time.perf_counter() + 30.0
            while not (sink.conns and sink.conns[0].n_bytes > allowed(up_s)):
                assert time.perf_counter() < deadline and not task.done(), "no bytes after the link came back"
                await asyncio.sleep(0.01)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return [(t - t0, n) for t, n in sink.conns[0].samples]

    samples = run(main)
    through = 0
    for t, n in samples:
        through += n
        assert through <= allowed(t + EARLY_S), f"{through} B by {t:.3f} s: more than the link carries"
    assert through > allowed(up_s)


@pytest.mark.parametrize(
    ("link", "bound_bytes"),
    [
        (LinkSpec(math.inf, math.inf), 448 * 1024),  # queue 256 KiB + one read + transport 2 × 64 KiB
        (LinkSpec(math.inf, math.inf, latency_up_ms=20), 4 * 1024 * 1024 + 192 * 1024),  # unpaced in-flight cap
        (LinkSpec(200, 200, latency_up_ms=20), 448 * 1024 + 500 * 1024 + 64 * 1024),  # + rate × latency
    ],
    ids=["unshaped", "unshaped+delay", "shaped+delay"],
)
def test_slow_receiver_keeps_proxy_memory_bounded(link, bound_bytes):
    async def main():
        hold = asyncio.Event()

        async def stalled(reader, writer):
            await hold.wait()  # never reads
            writer.close()

        server = await asyncio.start_server(stalled, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with Shaper([route("c0", port, link)]) as shaper:
            reader, writer = await asyncio.open_connection("127.0.0.1", shaper.ports["c0"])
            sent = 0
            chunk = b"m" * 65536

            async def pump():
                nonlocal sent
                while True:
                    writer.write(chunk)
                    sent += len(chunk)
                    await writer.drain()

            task = asyncio.ensure_future(pump())
            await asyncio.sleep(0.5)
            held = shaper.buffered_bytes()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            writer.close()
        hold.set()
        server.close()
        await server.wait_closed()
        return held, sent

    held, sent = run(main)
    assert sent < 16 * MB  # the sender was held back, not allowed to stream for 0.5 s (GB/s on loopback)
    assert held <= bound_bytes


def test_stop_closes_everything_midway():
    async def main():
        gc.collect()
        before = open_fds()
        async with Sink() as sink:
            shaper = Shaper([route(f"c{i}", sink.port, LinkSpec(4, 4, 10, 10)) for i in range(3)])
            await shaper.start()
            tasks = [asyncio.ensure_future(upload(p, 5 * MB, read_reply=False)) for p in shaper.ports.values()]
            await asyncio.sleep(0.3)
            assert shaper.open_connections == 3
            await shaper.stop()
            assert shaper.open_connections == 0
            results = await asyncio.gather(*tasks, return_exceptions=True)
            assert all(isinstance(r, (ConnectionError, OSError)) for r in results)
            snap = shaper.snapshot()
            assert all(c["closed_s"] is not None for c in snap["connections"])
        await asyncio.sleep(0.01)
        gc.collect()
        return before, open_fds()

    before, after = run(main)  # run() also fails on leftover tasks
    assert after == before
