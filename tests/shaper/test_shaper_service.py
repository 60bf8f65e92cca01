"""The shaper as a process of its own: spec file in, READY line with ports, series and ledger out,
clean stop on SIGTERM, one clear line for a bad spec."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from fedbw.errors import RunError
from fedbw.processes import Supervisor
from fedbw.shaper import LinkSpec, ShaperError
from fedbw.shaper.series import SeriesReader
from fedbw.shaper.service import parse_ready, read_spec, write_spec

from tests.shaper.helpers import route
from tests.shaper.virtual import EARLY_S


class _Sink(threading.Thread):
    """A blocking upstream that counts what arrives and the time of its last byte."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.n, self.t_last = 0, 0.0

    def run(self) -> None:
        conn, _ = self.sock.accept()
        while chunk := conn.recv(65536):
            self.n += len(chunk)
            self.t_last = time.perf_counter()
        conn.close()


def test_the_service_shapes_reports_and_stops_cleanly(tmp_path) -> None:  # noqa: ANN001
    sink = _Sink()
    sink.start()
    link = LinkSpec(up_mbps=8.0, down_mbps=8.0, latency_up_ms=5.0)
    spec = write_spec(tmp_path / "spec.json", [route("a", sink.port, link)], ledger=tmp_path / "ledger.jsonl",
                      series=tmp_path / "series.jsonl", interval_s=0.005)
    with Supervisor() as sup:
        child = sup.start("shaper", [sys.executable, "-m", "fedbw.shaper.service", str(spec)], {}, tmp_path / "s.log")
        ports = parse_ready(child.wait_for_line("READY {", 30).text)
        payload = b"x" * 200_000  # 0.2 s at 8 Mbps (+ 5 ms of latency)
        t0 = time.perf_counter()
        with socket.create_connection(("127.0.0.1", ports["a"])) as c:
            c.sendall(payload)
        deadline = time.monotonic() + 10
        while sink.n < len(payload) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sink.n == len(payload)
        assert sink.t_last - t0 >= 0.2 - EARLY_S  # paced by the link, seen at the receiver
        # tailed while the shaper still runs, until its sampler has written the last delivery
        while (series := SeriesReader(tmp_path / "series.jsonl").read()).totals("a", "up") < len(payload):
            assert time.monotonic() < deadline, series.totals("a", "up")
            time.sleep(0.01)
        assert series.totals("a", "up") == len(payload)
        t_read = time.perf_counter()  # after every sample the series holds was written
        tr = series.transfer("a", "up", t0 - 0.1, t_read)
        # the series tells the same transfer on the same clock: every byte, in after the client began,
        # out by the time the series was read back, and paced by the link in its own stamps too
        assert tr.bytes == len(payload)
        assert t0 <= tr.first_in_s < tr.last_out_s <= t_read
        assert tr.last_out_s - t0 >= 0.2 - EARLY_S
        child.expected_exit = True
        child.request_stop()
        assert child.wait(10) == 0
    header = json.loads((tmp_path / "ledger.jsonl").read_text().splitlines()[0])
    assert header["clients"]["a"]["link"]["up_mbps"] == 8.0


def test_a_bad_spec_ends_the_service_with_one_line(tmp_path) -> None:  # noqa: ANN001
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"routes": [{"client_id": "a", "listen_host": "127.0.0.1", "listen_port": 0,
                                           "upstream_host": "127.0.0.1", "upstream_port": 9,
                                           "link": {"up_mbps": -1, "down_mbps": 1}}]}))
    out = subprocess.run([sys.executable, "-m", "fedbw.shaper.service", str(bad)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().startswith("fedbw shaper: LinkSpec.up_mbps must be > 0 Mbps")
    assert "Traceback" not in out.stderr


def test_spec_round_trip_and_errors(tmp_path) -> None:  # noqa: ANN001
    link = LinkSpec(up_mbps=float("inf"), down_mbps=50, latency_down_ms=3, down_trace=((1.0, 0.0), (2.0, 50.0)))
    spec = write_spec(tmp_path / "s.json", [route("a", 9000, link)], shared_link=LinkSpec(100, 200))
    back = read_spec(spec)
    assert back["routes"][0].link == link and back["shared_link"] == LinkSpec(100, 200)
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ShaperError, match="needs a list of routes"):
        read_spec(tmp_path / "x.json")
    with pytest.raises(ShaperError, match="not a shaper READY line"):
        parse_ready("hello")


def test_the_emulations_shaper_process_reports_a_failed_start(tmp_path) -> None:  # noqa: ANN001
    from fedbw.engines.emulate.shaper_process import ShaperProcess

    # a port already taken: the service cannot bind it and says so
    taken = socket.create_server(("127.0.0.1", 0))
    try:
        r = route("a", 9000, LinkSpec(10, 10), listen_port=taken.getsockname()[1])
        with Supervisor() as sup, pytest.raises(RunError, match="link shaper did not start"):
            ShaperProcess(sup, tmp_path, [r], env={})
    finally:
        taken.close()


def test_the_emulations_shaper_stretches_its_quantum_with_the_dilation(tmp_path) -> None:  # noqa: ANN001
    """A dilated emulation's shaper grants K× the real seconds of link time per grant (the same bytes as
    undilated); an undilated one keeps the shaper's default for its number of routes."""
    from fedbw.engines.emulate.shaper_process import ShaperProcess
    from fedbw.shaper.stages import quantum_for
    from fedbw.timewarp import Dilation

    for k in (1.0, 4.0):
        work = tmp_path / f"k{k:g}"
        routes = [route(f"c{i}", 9000 + i, LinkSpec(30, 30).dilated(Dilation(k))) for i in range(2)]
        with Supervisor() as sup:
            ShaperProcess(sup, work, routes, env={}, dilation=Dilation(k))
            spec = json.loads((work / "shaper-spec.json").read_text())
        assert spec["quantum_s"] == pytest.approx(quantum_for(2) * k)
