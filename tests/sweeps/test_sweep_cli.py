"""`fedbw sweep --grid` from the command line: --json, --quiet, --resume, the progress bar's ETAs, errors."""

import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import fedbw.runner
from fedbw.cli import app
from fedbw.cli.experiments import SweepBar
from fedbw.results.sweep_index import GridPoint

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "experiments" / "quickstart.toml")
runner = CliRunner()


def _sets(tmp_path):
    return ["--set", f'output_dir="{tmp_path}"', "--set", "training.rounds=1"]


def test_json_then_quiet_resume_of_a_finished_sweep(tmp_path, monkeypatch):
    res = runner.invoke(app, ["sweep", QUICKSTART, "--grid", "network.profile=home-30,home-80", "--engine",
                              "estimate", *_sets(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    sweep_dir = Path(data["sweep_dir"])
    assert data["schema"] == "fedbw.sweep" and [p["status"] for p in data["points"]] == ["done", "done"]
    assert [p["overrides"] for p in data["points"]] == [{"network.profile": "home-30"}, {"network.profile": "home-80"}]
    assert all((sweep_dir / p["run_dir"] / "records.jsonl").exists() for p in data["points"])

    calls = []
    monkeypatch.setattr(fedbw.runner, "run_experiment", lambda *a, **k: calls.append(a))
    res = runner.invoke(app, ["sweep", QUICKSTART, "--engine", "estimate", *_sets(tmp_path), "--resume",
                              str(sweep_dir), "--quiet"])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == str(sweep_dir) and calls == []  # finished points are not run again


def test_the_table_names_each_point_and_where_to_go_next(tmp_path):
    res = runner.invoke(app, ["sweep", QUICKSTART, "-g", "network.profile=home-30,home-80", "-g",
                              "clients.per_round=2,4", "--engine", "estimate", *_sets(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "4 points" in res.output and res.output.count("done") >= 4
    assert "fedbw compare" in res.output and "fedbw report" in res.output


def test_a_failed_point_exits_1_and_says_how_to_resume(tmp_path, fail_point):
    fail_point(2)
    res = runner.invoke(app, ["sweep", QUICKSTART, "--grid", "network.profile=home-30,home-80", "--engine",
                              "estimate", *_sets(tmp_path), "--quiet"])
    assert res.exit_code == 1
    assert "1 of 2 sweep points did not finish (2: RunError: link exploded; the whole messages are" in res.output
    assert "--resume" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("args, words", [
    (["--grid", "network.profile"], "key=value"),
    (["--grid", "name=a,b"], "set by the sweep"),
    (["--grid", "clients.per_round=2,2"], "repeated"),
    (["--grid", "network.profile=home-31"], "sweep point 1 (home-31)"),
    (["--grid", "x.y=1", "--param", "up_mbps", "--values", "1"], "not both"),
    (["--values", "1,2"], "go with --param"),
    (["--param", "up_mbps", "--values", "10,20", "--engine", "simulate"], "shorthand of the analytic sweep"),
    ([], "at least one --grid"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    res = runner.invoke(app, ["sweep", QUICKSTART, *_sets(tmp_path), *args])
    assert res.exit_code == 2, res.output
    assert words in res.output and "Traceback" not in res.output
    assert list(tmp_path.iterdir()) == []  # nothing ran, no sweep directory left behind


def test_the_bar_gives_the_running_points_eta_from_its_rounds_and_the_sweeps_from_finished_points(monkeypatch):
    import fedbw.cli.experiments as ex

    clock = [100.0]
    monkeypatch.setattr("time.perf_counter", lambda: clock[0])

    class Prepared:  # what prepare_sweep hands the bar
        sweep_dir = Path("/tmp/s")
        index = type("I", (), {"points": [GridPoint(1, {"k": 1}), GridPoint(2, {"k": 2}), GridPoint(3, {"k": 3})]})
        configs = {i: type("C", (), {"training": type("T", (), {"rounds": 4})})() for i in (1, 2, 3)}
        todo = index.points
        notes: list[str] = []

    bar = SweepBar(quiet=False)
    monkeypatch.setattr(ex, "err", Console(file=open("/dev/null", "w")))
    with bar:
        bar.prepared(Prepared)
        bar.point_started(Prepared.todo[0], 1, 3)
        clock[0] += 10.0
        bar.round_progress(1, 2, 2)  # 1 of 4 rounds in 10 s: 30 s left of this point, then 2 more points
        assert bar._bar.tasks[bar._current].fields["eta"] == "point ETA 30.00 s"
        assert bar._bar.tasks[bar._points].fields["eta"] == "sweep ETA 110.00 s"  # 30 s + 2 × 40 s
        clock[0] += 30.0
        bar.round_progress(4, 2, 2)  # every round done: what is left is the summary and the plots
        assert "writing summary and plots" in bar._bar.tasks[bar._current].fields["eta"]
        Prepared.todo[0].status = "done"
        bar.point_finished(Prepared.todo[0])  # took 40 s
        bar.point_started(Prepared.todo[1], 2, 3)
        assert bar._bar.tasks[bar._points].fields["eta"] == "sweep ETA 80.00 s"  # this one and one more, 40 s each
        assert bar._bar.tasks[bar._points].completed == 1
