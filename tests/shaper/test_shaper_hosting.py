"""Ledger output and the non-async hosts: ShaperThread and run_shaper_blocking (as a process)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from fedbw.shaper import LinkSpec, Shaper, ShaperError, ShaperThread
from tests.shaper.helpers import Sink, route, run, upload
from tests.shaper.virtual import EARLY_S

ROOT = Path(__file__).resolve().parents[2]


def test_ledger_jsonl_and_snapshot(tmp_path):
    path = tmp_path / "ledger.jsonl"

    async def main():
        async with Sink(reply=b"pong") as sink:
            shaper = Shaper([route("a", sink.port, LinkSpec(50, 50, 2, 2)), route("b", sink.port, LinkSpec(50, 50))],
                            ledger_path=path)
            async with shaper:
                for _ in range(2):
                    await upload(shaper.ports["a"], 20_000)
                live = shaper.snapshot()
            return live

    live = run(main)
    assert live["clients"]["a"]["up"]["bytes_out"] == 40_000
    assert live["clients"]["a"]["down"]["bytes_out"] == 8
    assert live["clients"]["a"]["connections_total"] == 2
    json.dumps(live)  # plain data
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [rec["type"] for rec in lines] == ["start", "conn", "conn", "client", "client"]
    start = lines[0]
    assert start["schema"] == "fedbw.shaper-ledger" and start["clients"]["a"]["link"]["latency_up_ms"] == 2
    conn = lines[1]
    assert conn["client_id"] == "a" and conn["error"] is None
    assert conn["up"]["bytes_in"] == conn["up"]["bytes_out"] == 20_000
    assert conn["up"]["first_in_s"] <= conn["up"]["first_out_s"] <= conn["up"]["last_out_s"] <= conn["closed_s"]
    # 20 kB at 50 Mbps ≈ 3.2 ms + 2 ms latency between first byte in and last byte out
    assert conn["up"]["last_out_s"] - conn["up"]["first_in_s"] >= 0.005
    summary = {rec["client_id"]: rec for rec in lines[3:]}
    assert summary["b"]["connections_total"] == 0 and summary["a"]["up"]["bytes_out"] == 40_000


def test_shaper_thread_serves_blocking_code():
    async def serve(port_box, stop):
        async with Sink(reply=b"ok") as sink:
            port_box.append(sink.port)
            while not stop.is_set():
                await asyncio.sleep(0.01)

    port_box: list[int] = []
    stop = threading.Event()
    server_thread = threading.Thread(target=lambda: asyncio.run(serve(port_box, stop)), daemon=True)
    server_thread.start()
    while not port_box:
        time.sleep(0.01)
    try:
        st = ShaperThread([route("c0", port_box[0], LinkSpec(16, 16))]).start()
        try:
            with socket.create_connection(("127.0.0.1", st.ports["c0"])) as sock:
                t0 = time.perf_counter()
                sock.sendall(b"q" * 200_000)
                sock.shutdown(socket.SHUT_WR)
                assert sock.recv(10) == b"ok"
                elapsed = time.perf_counter() - t0
            # shaped: 200 kB at 16 Mbps take 0.1 s at least (how close to 0.1 s: test_shaper_virtual.py)
            assert elapsed >= 0.1 - EARLY_S
            snap = st.snapshot()
            assert snap["clients"]["c0"]["up"]["bytes_out"] == 200_000
        finally:
            final = st.stop()
        assert final is not None and final["clients"]["c0"]["connections_open"] == 0
        assert not st.running
    finally:
        stop.set()
        server_thread.join(5)


def test_shaper_thread_bind_failure_raises():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        st = ShaperThread([route("c0", 9, LinkSpec(8, 8), listen_port=port)])
        with pytest.raises(ShaperError, match="already in use"):
            st.start()
    assert threading.active_count() < 50  # the loop thread was shut down, not leaked
    assert not st.running


def test_run_shaper_blocking_stops_on_sigterm(tmp_path):
    ledger = tmp_path / "l.jsonl"
    script = textwrap.dedent(
        f"""
        import socket, sys
        from fedbw.shaper import ClientRoute, LinkSpec, run_shaper_blocking
        srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
        routes = [ClientRoute("c0", "127.0.0.1", 0, "127.0.0.1", srv.getsockname()[1], LinkSpec(8, 8))]
        def ready(shaper):
            print("READY", shaper.ports["c0"], flush=True)
        snap = run_shaper_blocking(routes, ledger_path={str(ledger)!r}, on_ready=ready)
        print("STOPPED", snap["clients"]["c0"]["connections_total"], flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY"), line
        with socket.create_connection(("127.0.0.1", int(line.split()[1]))):
            pass
        time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert out.strip() == "STOPPED 1"
    types = [json.loads(x)["type"] for x in ledger.read_text().splitlines()]
    assert types == ["start", "conn", "client"]


def test_run_shaper_blocking_reports_start_errors():
    from fedbw.shaper import run_shaper_blocking

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ShaperError, match="already in use"):
            run_shaper_blocking([route("c0", port, LinkSpec(8, 8), listen_port=port)])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    with pytest.raises(ShaperError, match=f"upstream 127.0.0.1:{dead} refused the connection"):
        run_shaper_blocking([route("c0", dead, LinkSpec(8, 8))])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers removed again


def test_run_shaper_blocking_stop_event():
    from fedbw.shaper import run_shaper_blocking

    stop = threading.Event()
    seen: list[dict[str, int]] = []

    def ready(shaper):
        seen.append(dict(shaper.ports))
        stop.set()

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        snap = run_shaper_blocking([route("c0", server.getsockname()[1], LinkSpec(8, 8))], on_ready=ready,
                                   stop_event=stop)
    assert seen and seen[0]["c0"] > 0 and snap["ports"] == seen[0]
