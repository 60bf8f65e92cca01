"""Grid sweeps on the estimate engine (fast): directories, index, validation before running, resume."""

import json
import os
from pathlib import Path

import pytest

import fedbw.runner
from fedbw.errors import ConfigError
from fedbw.sweeps import prepare_sweep, read_index, sweep
from fedbw.results.sweep_index import write_index
from fedbw.sweeps.run import check_not_running

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "experiments" / "quickstart.toml"


def sets(tmp_path):
    return [f'output_dir="{tmp_path}"', "training.rounds=2"]


def test_a_grid_gives_one_run_directory_per_point_with_its_overrides(tmp_path):
    sweep_dir, index = sweep(QUICKSTART, ["network.profile=home-30,home-80", "clients.per_round=2,5"],
                             sets(tmp_path), "estimate")
    assert sweep_dir.parent == tmp_path and sweep_dir.name.startswith("quickstart-sweep-")
    on_disk = read_index(sweep_dir)
    assert [p.status for p in on_disk.points] == ["done"] * 4
    assert on_disk.engine == "estimate" and [a.key for a in on_disk.grid] == ["network.profile", "clients.per_round"]
    seen = set()
    for p in on_disk.points:
        run_dir = sweep_dir / p.run_dir
        assert {"records.jsonl", "summary.json", "resolved_config.json", "breakdown.png"} <= {
            f.name for f in run_dir.iterdir()}
        cfg = json.loads((run_dir / "resolved_config.json").read_text())
        assert cfg["network"]["mix"][0]["profile"] == p.overrides["network.profile"]
        assert cfg["clients"]["per_round"] == p.overrides["clients.per_round"]
        assert cfg["engine"] == "estimate" and cfg["training"]["rounds"] == 2
        seen.add((cfg["network"]["mix"][0]["profile"], cfg["clients"]["per_round"]))
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["rounds"] == 2
    assert seen == {("home-30", 2), ("home-30", 5), ("home-80", 2), ("home-80", 5)}


def test_every_point_is_checked_before_any_runs(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(fedbw.runner, "run_experiment", lambda *a, **k: calls.append(a))
    with pytest.raises(ConfigError, match=r"(?s)sweep point 2 \(500\).*per_round"):
        sweep(QUICKSTART, ["clients.per_round=5,500"], sets(tmp_path), "estimate")
    assert calls == [] and list(tmp_path.iterdir()) == []  # nothing ran, no sweep directory left behind
    with pytest.raises(ConfigError, match="sweep point 1"):
        sweep(QUICKSTART, ["network.profile=home-31"], sets(tmp_path), "estimate")


def _interrupting(at_call: int, at_round: int = 2):
    """run_experiment that is cut short by Ctrl-C in round ``at_round`` of call number ``at_call``."""
    real = fedbw.runner.run_experiment
    calls = []

    def run(cfg, progress):
        calls.append(cfg.name)

        def tick(r, done, total):
            if len(calls) == at_call and r >= at_round:
                raise KeyboardInterrupt
            progress(r, done, total)

        return real(cfg, tick)

    return run, calls


def test_an_interrupted_sweep_resumes_skipping_finished_points_and_rerunning_the_cut_one(tmp_path, monkeypatch):
    grid = ["network.profile=home-30,home-50,home-80"]
    run, calls = _interrupting(at_call=2)
    monkeypatch.setattr(fedbw.runner, "run_experiment", run)
    holder = {}
    with pytest.raises(KeyboardInterrupt):
        sweep(QUICKSTART, grid, sets(tmp_path), "estimate", on_prepared=lambda p: holder.update(dir=p.sweep_dir))
    sweep_dir = holder["dir"]
    index = read_index(sweep_dir)
    assert [p.status for p in index.points] == ["done", "interrupted", "pending"]
    cut = index.points[1].run_dir
    assert cut and (sweep_dir / cut / "records.jsonl").exists()  # its finished round is kept

    run2, calls2 = _interrupting(at_call=-1)
    monkeypatch.setattr(fedbw.runner, "run_experiment", run2)
    _, index = sweep(QUICKSTART, [], sets(tmp_path), "estimate", resume=sweep_dir)  # the grid comes from sweep.json
    assert calls2 == ["quickstart-p2", "quickstart-p3"]
    assert [p.status for p in index.points] == ["done"] * 3
    assert index.points[1].previous_run_dirs == [cut] and index.points[1].run_dir != cut
    assert index.points[1].attempts == 2 and index.points[0].attempts == 1
    # resuming a finished sweep runs nothing
    run3, calls3 = _interrupting(at_call=-1)
    monkeypatch.setattr(fedbw.runner, "run_experiment", run3)
    sweep(QUICKSTART, grid, sets(tmp_path), "estimate", resume=sweep_dir)
    assert calls3 == []


def test_resume_refuses_another_grid_engine_set_or_config(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(QUICKSTART.read_text())
    sweep_dir, _ = sweep(cfg, ["network.profile=home-30"], sets(tmp_path), "estimate")
    with pytest.raises(ConfigError, match="same grid"):
        prepare_sweep(cfg, ["network.profile=home-80"], sets(tmp_path), "estimate", resume=sweep_dir)
    with pytest.raises(ConfigError, match="engine"):
        prepare_sweep(cfg, [], sets(tmp_path), "simulate", resume=sweep_dir)
    with pytest.raises(ConfigError, match="--set"):
        prepare_sweep(cfg, [], [*sets(tmp_path), "seed=3"], "estimate", resume=sweep_dir)
    cfg.write_text(QUICKSTART.read_text() + "\n# edited\n")
    with pytest.raises(ConfigError, match="differs now"):
        prepare_sweep(cfg, [], sets(tmp_path), "estimate", resume=sweep_dir)
    with pytest.raises(ConfigError, match="not a sweep directory"):
        prepare_sweep(cfg, [], sets(tmp_path), "estimate", resume=tmp_path)


def test_a_failed_point_is_recorded_and_the_sweep_goes_on(tmp_path, fail_point):
    fail_point(1)
    sweep_dir, index = sweep(QUICKSTART, ["network.profile=home-30,home-80"], sets(tmp_path), "estimate")
    assert [p.status for p in index.points] == ["failed", "done"]
    assert "link exploded" in index.points[0].error
    assert read_index(sweep_dir).points[0].status == "failed"


def test_a_point_running_in_a_live_process_blocks_resume(tmp_path):
    sweep_dir, index = sweep(QUICKSTART, ["network.profile=home-30"], sets(tmp_path), "estimate")
    index.points[0].status, index.points[0].pid = "running", os.getppid()  # a live process that is not us
    write_index(sweep_dir, index)
    with pytest.raises(ConfigError, match="being run by process"):
        check_not_running(read_index(sweep_dir), sweep_dir)


@pytest.mark.parametrize("text, words", [("{", "not valid JSON"), ('{"schema": "other"}', "not a fedbw sweep"),
                                         ('{"schema": "fedbw.sweep", "schema_version": 2}', "incomplete"),
                                         ('{"schema": "fedbw.sweep", "version": 1}', "schema version None")])
def test_a_damaged_index_is_a_clear_error(tmp_path, text, words):
    (tmp_path / "sweep.json").write_text(text)
    with pytest.raises(ConfigError, match=words):
        read_index(tmp_path)


def test_a_point_left_running_by_a_killed_process_is_rerun_on_resume(tmp_path):
    import subprocess

    sweep_dir, index = sweep(QUICKSTART, ["network.profile=home-30,home-80"], sets(tmp_path), "estimate")
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid is now free: the sweep process that ran point 2 was SIGKILLed
    index.points[1].status, index.points[1].pid, index.points[1].run_dir = "running", dead.pid, None
    write_index(sweep_dir, index)
    _, after = sweep(QUICKSTART, [], sets(tmp_path), "estimate", resume=sweep_dir)
    assert [p.status for p in after.points] == ["done", "done"]
    assert [p.attempts for p in after.points] == [1, 2]
    assert (sweep_dir / after.points[1].run_dir / "records.jsonl").exists()
