"""`fedbw shape` as a user runs it: a real process in front of a real TCP service."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time



def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sink(received: dict) -> socket.socket:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                while chunk := conn.recv(65536):
                    received.setdefault("first", time.perf_counter())
                    received["bytes"] = received.get("bytes", 0) + len(chunk)
                    received["last"] = time.perf_counter()

    threading.Thread(target=serve, daemon=True).start()
    return srv


def test_shape_cli_limits_a_real_transfer_and_stops_on_ctrl_c():
    received: dict = {}
    srv = _sink(received)
    port = _free_port()
    cmd = [sys.executable, "-m", "fedbw.cli", "shape", "--listen", f"127.0.0.1:{port}",
           "--upstream", f"127.0.0.1:{srv.getsockname()[1]}", "--up-mbps", "8", "--down-mbps", "8"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "160"})
    try:
        deadline = time.time() + 30
        while True:
            try:
                client = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                assert time.time() < deadline, "shaper did not start listening"
                time.sleep(0.2)
        payload = b"x" * 500_000  # 4 Mbit at 8 Mbps: 0.5 s at the receiver
        t0 = time.perf_counter()
        client.sendall(payload)
        client.shutdown(socket.SHUT_WR)
        while received.get("bytes", 0) < len(payload) and time.perf_counter() - t0 < 10:
            time.sleep(0.01)
        client.close()
        assert received["bytes"] == len(payload)
        assert received["last"] - t0 >= 0.49  # shaped: 4 Mbit at 8 Mbps take 0.5 s at least
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
        srv.close()
    assert proc.returncode == 0, out
    assert "Traceback" not in out


def test_shape_cli_refuses_non_loopback_without_flag():
    res = subprocess.run([sys.executable, "-m", "fedbw.cli", "shape", "--listen", "0.0.0.0:9",
                          "--upstream", "127.0.0.1:1", "--profile", "home-30"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "allow-non-loopback" in (res.stdout + res.stderr)
