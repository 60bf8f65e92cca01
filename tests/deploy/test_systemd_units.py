"""deploy/'s systemd units for `fedbw shape` on a client host: valid units, and the shaper's ExecStart,
with the example settings, run as systemd would run it (shapes, writes its ledger, stops on SIGTERM)."""

from __future__ import annotations

import configparser
import os
import re
import shlex
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fedbw.engines.emulate.ports import wait_connectable
from fedbw.shaper.ledger import read_ledger

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
VENV_BIN = str(Path(sys.executable).parent)


def _unit(name: str) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # systemd keys are case-sensitive
    unit.read_string((DEPLOY / name).read_text())
    return unit


def _env(name: str = "shape.env") -> dict[str, str]:
    lines = [ln.strip() for ln in (DEPLOY / name).read_text().splitlines()]
    return dict(ln.split("=", 1) for ln in lines if ln and not ln.startswith("#"))


def _expand(command: str, env: dict[str, str]) -> list[str]:
    """systemd's ${VAR} expansion and word splitting of an ExecStart line."""
    return shlex.split(re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], command))


def test_the_supernode_dials_the_local_shaper_after_it_started() -> None:
    shape, node, env = _unit("fedbw-shape.service"), _unit("flower-supernode.service"), _env()
    assert node["Unit"]["Requires"] == node["Unit"]["After"] == "fedbw-shape.service"
    listen = _expand(shape["Service"]["ExecStart"], env)
    dial = _expand(node["Service"]["ExecStart"], env)
    assert listen[listen.index("--listen") + 1] == dial[dial.index("--superlink") + 1] == env["FEDBW_SHAPE_LISTEN"]
    assert env["FEDBW_SHAPE_LISTEN"].startswith("127.0.0.1:")  # the shaper binds loopback only
    assert "partition-id=0 num-partitions=10" in dial
    assert "2" in shape["Service"]["RestartPreventExitStatus"].split()  # a bad setting is not retried forever


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_accepts_both_units(tmp_path: Path) -> None:
    for name in ("fedbw-shape.service", "flower-supernode.service"):
        (tmp_path / name).write_text((DEPLOY / name).read_text().replace("/opt/fedbw/.venv/bin", VENV_BIN))
    proc = subprocess.run(["systemd-analyze", "verify", "fedbw-shape.service", "flower-supernode.service"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr


def test_the_shaper_service_command_shapes_logs_and_stops_on_sigterm(tmp_path: Path) -> None:
    received = {"bytes": 0}

    class Sink(socketserver.BaseRequestHandler):  # every connection: the shaper probes its upstream first
        def handle(self) -> None:
            while chunk := self.request.recv(65536):
                received["bytes"] += len(chunk)
                received["last"] = time.perf_counter()

    sink = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Sink)
    sink.daemon_threads = True
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**_env(), "FEDBW_SHAPE_LISTEN": f"127.0.0.1:{port}",
           "FEDBW_SHAPE_UPSTREAM": f"127.0.0.1:{sink.server_address[1]}"}
    ledger = tmp_path / "ledger.jsonl"
    argv = _expand(_unit("fedbw-shape.service")["Service"]["ExecStart"], env)
    argv = [a.replace("/opt/fedbw/.venv/bin", VENV_BIN).replace("/var/lib/fedbw-shape/ledger.jsonl", str(ledger))
            for a in argv]
    assert argv[0] == f"{VENV_BIN}/fedbw" and env["FEDBW_SHAPE_PROFILE"] == "home-30"
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "160"})
    try:
        assert wait_connectable(port, 120.0) and proc.poll() is None, "the shaper did not listen"
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        payload = b"x" * 750_000  # 6 Mbit up a home-30 link (30 Mbps at TCP efficiency < 1): ≥ 0.2 s
        t0 = time.perf_counter()
        client.sendall(payload)
        client.shutdown(socket.SHUT_WR)
        while received["bytes"] < len(payload) and time.perf_counter() - t0 < 10:
            time.sleep(0.01)
        client.close()
        assert received["bytes"] == len(payload)
        assert received["last"] - t0 >= 0.2  # shaped: unshaped loopback takes milliseconds
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)  # what `systemctl stop` sends
        out, _ = proc.communicate(timeout=60)
        sink.shutdown()
        sink.server_close()
    assert proc.returncode == 0 and "Traceback" not in out, out
    rows = read_ledger(ledger)
    conns = [r for r in rows if r["type"] == "conn"]  # the ledger: one line per connection, bytes each way
    assert rows[0]["type"] == "start" and sum(r["up"]["bytes_out"] for r in conns) == len(payload), rows
