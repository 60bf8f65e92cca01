"""``fedbw shape --trace``: every client's link replays a trace file, looped; bad files and a lone
``--trace-down`` are one-line errors (exit 2)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from fedbw.cli import app
from fedbw.cli.deployment import traced_routes
from fedbw.shaper.cli_support import routes_from_options
from fedbw.traces import load_trace


def test_every_route_replays_the_trace_looped_with_its_own_latency(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("t_s,up_mbps,down_mbps\n0,10,50\n2,0,50\n3,20,40\n4,20,40\n")  # the last step lasts 1 s: 5 s period
    routes = routes_from_options(listen="127.0.0.1:9100", upstream="127.0.0.1:9092", clients=2, up_mbps=30.0,
                                 down_mbps=300.0, rtt_ms=20.0)
    out = traced_routes(routes, load_trace(f), until_s=8.0)
    assert len(out) == 2
    for r in out:
        assert r.link.up_trace[:4] == ((0.0, 10.0), (2.0, 0.0), (3.0, 20.0), (5.0, 10.0))  # looped at 5 s
        assert r.link.down_trace[:3] == ((0.0, 50.0), (3.0, 40.0), (5.0, 50.0))
        assert r.link.latency_up_ms == routes[0].link.latency_up_ms


def test_bad_trace_files_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("t_s,up_mbps,down_mbps\n5,10,10\n1,10,10\n")
    r = CliRunner().invoke(app, ["shape", "--upstream", "127.0.0.1:9", "--profile", "home-30", "--trace", str(bad)])
    assert r.exit_code == 2 and "bad.csv" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["shape", "--upstream", "127.0.0.1:9", "--trace-down", str(bad)])
    assert r.exit_code == 2 and "--trace-down pairs with" in r.output
