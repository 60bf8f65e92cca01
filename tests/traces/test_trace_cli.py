"""`fedbw trace show`: the numbers per direction, a sparkline, a PNG on request, one line for a bad file."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from fedbw.cli import app
from fedbw.cli.common import out
from fedbw.report.traces import BLOCKS, sparkline
from fedbw.traces import RateSeries


def test_show_prints_each_directions_numbers_and_sparkline(tmp_path: Path) -> None:
    path = tmp_path / "evening.csv"
    path.write_text("t_s,up_mbps,down_mbps\n0,10,50\n2,20,50\n3,5,0\n")
    res = CliRunner().invoke(app, ["trace", "show", str(path)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    up = next(line for line in lines if line.startswith("up "))
    down = next(line for line in lines if line.startswith("down "))
    assert "duration 4.00 s" in up and "mean 11.2 Mbps" in up and "p10 5 Mbps" in up and "p90 20 Mbps" in up
    assert "mean 37.5 Mbps" in down and "p10 0 Mbps" in down and "p90 50 Mbps" in down
    sparks = [line for line in lines if line.strip() and set(line.strip()) <= set(BLOCKS + " ")]
    assert len(sparks) == 2 and all(len(line) == out.width for line in sparks)  # as wide as the console
    assert "█" in sparks[0] and sparks[1].endswith(" " * 30)  # down's last quarter: the link is down
    assert "loops" in res.output


def test_show_reads_mahimahi_up_and_down_and_draws_a_png(tmp_path: Path) -> None:
    up, down = tmp_path / "lte.up", tmp_path / "lte.down"
    up.write_text("\n".join(str(ms) for ms in range(2, 2001, 2)) + "\n")
    down.write_text("\n".join(str(ms) for ms in range(1, 2001)) + "\n")
    png = tmp_path / "figs" / "lte.png"
    res = CliRunner().invoke(app, ["trace", "show", str(up), "--down", str(down), "--png", str(png), "--bin-ms", "500"])
    assert res.exit_code == 0, res.output
    assert "mean 6 Mbps" in res.output and "mean 12 Mbps" in res.output and "500 ms bins" in res.output
    assert png.stat().st_size > 1000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_bad_file_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("0,10,50\n1,-3,50\n")
    for args in (["trace", "show", str(bad)], ["trace", "show", str(tmp_path / "missing")],
                 ["trace", "show", str(bad), "--bin-ms", "0"]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output
        assert res.exception is None or isinstance(res.exception, SystemExit)
    res = CliRunner().invoke(app, ["trace", "show", str(bad)])
    assert f"{bad}:2:" in res.output and "up_mbps is -3" in res.output


def test_a_sparkline_is_the_console_wide_and_scaled_to_the_top() -> None:
    series = RateSeries(((0.0, 8.0), (1.0, 1.0), (2.0, 0.0), (3.0, 4.0)), 4.0)
    assert sparkline(series, 4) == "█▁ ▄"
    assert sparkline(series, 8) == "██▁▁  ▄▄"
    assert len(sparkline(series, 157)) == 157


def test_availability_prints_who_is_on_line_and_saves_a_generated_trace(tmp_path: Path) -> None:
    path = tmp_path / "on.csv"
    path.write_text("client,start_s,end_s\n0,0,60\n1,30,120\n")
    res = CliRunner().invoke(app, ["trace", "availability", str(path)])
    assert res.exit_code == 0, res.output
    assert "2 clients over 2.0 min" in res.output and "on line 62 % of the time" in res.output  # (60 + 90) / (2 × 120)
    assert "mean session 75.00 s" in res.output and "mean gap -" in res.output
    saved = tmp_path / "gen.csv"
    res = CliRunner().invoke(app, ["trace", "availability", "--generate", "two-state", "--clients", "5", "--on", "60",
                                   "--off", "60", "--hours", "1", "--save", str(saved)])
    assert res.exit_code == 0, res.output
    again = CliRunner().invoke(app, ["trace", "availability", str(saved)])
    assert "5 clients" in again.output
    bad = CliRunner().invoke(app, ["trace", "availability", "--generate", "weekly"])
    assert bad.exit_code == 2 and "use two-state or diurnal" in bad.output
