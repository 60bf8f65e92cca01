"""The shipped traces: each CSV is exactly the draw its numbers in traces.toml make (a CSV cannot drift from
them), every one reads back, and a name works wherever a trace file goes."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fedbw.catalog.traces import TRACE_DIR, get_shipped_trace, shipped_traces, trace_path
from fedbw.cli import app
from fedbw.errors import CatalogError
from fedbw.traces import load_trace
from fedbw.traces.csv_trace import csv_text


def test_every_shipped_csv_is_the_draw_of_its_numbers() -> None:
    traces = shipped_traces()
    assert set(traces) == {"lte-short", "lte-fast", "lte-driving", "umts-driving"}
    assert {p.stem for p in TRACE_DIR.glob("*.csv")} == set(traces)
    for shipped in traces.values():
        drawn = shipped.draw()
        read = load_trace(shipped.path)
        for d in ("up", "down"):
            assert [read.mbps_at(d, t) for t in range(int(shipped.duration_s))] == \
                [drawn.mbps_at(d, t) for t in range(int(shipped.duration_s))]
            assert read.mean(d) == pytest.approx(getattr(shipped, d).mean_mbps, rel=1e-4)
        assert read.duration_s == shipped.duration_s
        body = [line for line in shipped.path.read_text().splitlines() if not line.startswith("#")]
        assert body == [line for line in csv_text(drawn, shipped.up.step_s).splitlines() if not line.startswith("#")]
        assert "GPL" in shipped.licence_of_source and shipped.measured_by.startswith("benchmarks/traces.py")


def test_a_name_is_a_shipped_trace_and_a_path_stays_a_path(tmp_path: Path) -> None:
    assert trace_path("lte-short") == get_shipped_trace("lte-short").path
    mine = tmp_path / "lte-short"
    mine.write_text("0,1,1\n1,2,2\n")
    assert trace_path(mine) == mine  # an existing file wins over a name
    with pytest.raises(CatalogError, match="lte-driving"):
        trace_path("lte-drivng")


def test_profiles_lists_the_traces_and_show_takes_a_name() -> None:
    res = CliRunner().invoke(app, ["profiles"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "Link-rate traces" in res.output
    assert all(name in res.output for name in shipped_traces())
    res = CliRunner().invoke(app, ["trace", "show", "lte-driving"])
    assert res.exit_code == 0 and "duration 10.0 min" in res.output
    res = CliRunner().invoke(app, ["trace", "show", "lte-drivng"])
    assert res.exit_code == 2 and "Did you mean 'lte-driving'" in res.output and "Traceback" not in res.output


def test_generate_writes_a_stand_in_with_the_sources_mean(tmp_path: Path) -> None:
    source = tmp_path / "mine.csv"
    source.write_text("t_s,up_mbps,down_mbps\n" + "".join(f"{t},{1 + (t * 7) % 5},{10 + (t * 3) % 4}\n"
                                                          for t in range(120)))
    out = tmp_path / "stand-in.csv"
    res = CliRunner().invoke(app, ["trace", "generate", "--like", str(source), "--save", str(out), "--seconds", "300",
                                   "--seed", "3"])
    assert res.exit_code == 0, res.output
    assert "lag-1 correlation" in res.output and f"wrote {out}" in res.output
    made, src = load_trace(out), load_trace(source)
    assert made.duration_s == 300 and made.mean("up") == pytest.approx(src.mean("up"), rel=1e-4)
    res = CliRunner().invoke(app, ["trace", "generate", "--like", str(tmp_path / "none.csv"), "--save", str(out)])
    assert res.exit_code == 2 and "cannot read it" in res.output


def test_saving_where_no_file_can_be_written_is_one_line(tmp_path: Path) -> None:
    nowhere = tmp_path / "no-such-dir" / "x.csv"
    for args in (["trace", "generate", "--like", str(get_shipped_trace("lte-short").path), "--save", str(nowhere)],
                 ["trace", "availability", "--clients", "3", "--hours", "1", "--save", str(nowhere)]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code != 0 and f"cannot write {nowhere}" in res.output and "Traceback" not in res.output
