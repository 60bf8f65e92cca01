"""Real loopback transfers through the shaper: rates and latency measured at the receiver.

Each test moves ≈ 1 s of traffic; tolerances allow for a busy 2-core machine.
"""

from __future__ import annotations

import asyncio
import gc
import math
import socket
import statistics
import struct
import time

import pytest

from fedbw.shaper import ClientRoute, LinkSpec, Shaper, ShaperError
from tests.shaper.helpers import LOOPS, Echo, Sink, open_fds, route, run, upload

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
    assert elapsed == pytest.approx(1.0, rel=0.03)  # 1 MB at 8 Mbps of payload


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
    assert elapsed == pytest.approx(1.0, rel=0.03)


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
    # late by a few ms when the shared machine is busy, never early beyond the 1 ms timer grid
    assert 0.069 <= statistics.median(rtts) <= 0.074
    assert min(rtts) >= 0.068  # timers run on a 1 ms grid: a delivery may be up to 1 ms early


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
    assert got == sent
    assert min(rtts) >= 0.0095  # never below latency - jitter (minus the 0.5 ms timer grid)
    within = [r for r in rtts if r <= 0.031]
    assert len(within) >= 0.8 * len(rtts)  # 20 ± 10 ms; a busy machine may add a few late ones
    assert statistics.pstdev(rtts) > 0.002  # jitter is really there


def test_connections_of_one_client_share_its_link():
    async def main():
        async with Sink() as sink, Shaper([route("c0", sink.port, LinkSpec(8, 100))]) as shaper:
            port = shaper.ports["c0"]
            starts = await asyncio.gather(*(upload(port, MB // 2, read_reply=False) for _ in range(2)))
            await sink.wait_done(2)
            t0 = min(s for s, _ in starts)
            return [c.t_last_s - t0 for c in sink.conns]

    ends = run(main)
    assert max(ends) == pytest.approx(1.0, rel=0.03)  # aggregate = the link rate
    assert min(ends) > 0.9  # round robin: both progress together


def test_clients_have_independent_links():
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
        assert end == pytest.approx(0.5, rel=0.04)
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
    assert elapsed == pytest.approx(0.5, rel=0.04)
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
    async def main():
        link = LinkSpec(16, 100, up_trace=((0.3, 0), (0.6, 16)))
        async with Sink() as sink, Shaper([route("c0", sink.port, link)]) as shaper:
            t0 = shaper.t0_s
            task = asyncio.ensure_future(upload(shaper.ports["c0"], 10 * MB, read_reply=False))
            await asyncio.sleep(1.0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return [(t - t0, n) for t, n in sink.conns[0].samples]

    samples = run(main)
    def delivered(a, b):
        return sum(n for t, n in samples if a <= t < b)
    assert delivered(0.32, 0.6) == 0  # link down
    rate_bytes = 16e6 / 8
    t_first = samples[0][0]  # the connection needs a few ms to open
    assert delivered(0.0, 0.3) == pytest.approx((0.3 - t_first) * rate_bytes, rel=0.06)
    assert delivered(0.6, 0.95) == pytest.approx(0.35 * rate_bytes, rel=0.06)


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
