import json
from pathlib import Path

from typer.testing import CliRunner

from fedbw.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_estimate_table():
    res = runner.invoke(app, ["estimate", "--model", "resnet50", "--profile", "home-30", "--fabric", "ib-ndr400",
                              "--ranks", "8"])
    assert res.exit_code == 0, res.output
    assert "home-30" in res.output and "ib-ndr400" in res.output and "bandwidth-bound" in res.output


def test_estimate_json():
    res = runner.invoke(app, ["estimate", "--model", "params=7B", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["params"] == 7_000_000_000
    assert [p["profile"] for p in data["profiles"]] == ["home-30", "home-50", "home-80"]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[clients]\ntotal = 2\nper_round = 3\n")
    res = runner.invoke(app, ["validate", str(bad)])
    assert res.exit_code == 2
    assert "Traceback" not in res.output and "per_round" in res.output
    res = runner.invoke(app, ["estimate", "--model", "resnet5"])
    assert res.exit_code == 2 and "resnet50" in res.output
    res = runner.invoke(app, ["run", str(tmp_path / "nope.toml")])
    assert res.exit_code == 2 and "not found" in res.output


def test_validate_and_set():
    res = runner.invoke(app, ["validate", str(ROOT / "experiments/quickstart.toml"), "--set", "clients.total=40"])
    assert res.exit_code == 0 and "5/40" in res.output


def test_run_estimate_writes_run_dir(tmp_path):
    res = runner.invoke(app, ["run", str(ROOT / "experiments/quickstart.toml"), "--engine", "estimate",
                              "--set", f'output_dir="{tmp_path}"'])
    assert res.exit_code == 0, res.output
    (run_dir,) = list(tmp_path.iterdir())
    assert {p.name for p in run_dir.iterdir()} >= {"records.jsonl", "resolved_config.json", "environment.json"}
    res = runner.invoke(app, ["report", str(run_dir)])
    assert res.exit_code == 0 and "home-30" in res.output


def test_report_and_compare_refuse_damaged_records_and_note_a_torn_last_line(tmp_path):
    res = runner.invoke(app, ["run", str(ROOT / "experiments/quickstart.toml"), "--engine", "estimate",
                              "--set", f'output_dir="{tmp_path}"'])
    (run_dir,) = list(tmp_path.iterdir())
    records = run_dir / "records.jsonl"
    with records.open("a") as fh:
        fh.write('{"kind": "round", "run_id": "x", "rou')  # a crash mid-write
    res = runner.invoke(app, ["report", str(run_dir)])
    assert res.exit_code == 0 and "cut short" in res.output and "skipped" in res.output
    lines = records.read_text().splitlines()
    records.write_text("\n".join([lines[0], lines[1], "not json", *lines[2:]]) + "\n")
    for cmd in (["report", str(run_dir)], ["compare", str(run_dir), str(run_dir)]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2 and "records.jsonl:3: not a JSON record" in res.output, res.output
        assert "Traceback" not in res.output


def test_catalog_commands():
    assert "nvlink4" in runner.invoke(app, ["profiles"]).output
    assert "124,439,808" in runner.invoke(app, ["models"]).output


def test_sweep_cli(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('engine = "estimate"\n')
    res = runner.invoke(app, ["sweep", str(cfg), "--param", "up_mbps", "--range", "10:80:8"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["sweep", str(cfg), "--param", "up_mbps", "--range", "10:80"])
    assert res.exit_code == 2 and "start:stop:count" in res.output


def test_compare_and_plots(tmp_path):
    # links only: with Flower's 3 s polls a small CNN's round is the same on 30 and 80 Mbps
    for profile in ("home-30", "home-80"):
        res = runner.invoke(app, ["run", str(ROOT / "experiments/quickstart.toml"), "--engine", "estimate",
                                  "--set", f'output_dir="{tmp_path}"', "--set", f"network.profile={profile}",
                                  "--set", 'framework="none"'])
        assert res.exit_code == 0, res.output
    runs = sorted(tmp_path.iterdir())
    assert all((r / "breakdown.png").stat().st_size > 1000 and (r / "rounds.png").exists() for r in runs)
    res = runner.invoke(app, ["compare", *map(str, runs), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data[0]["mean_round_time_s"] > data[1]["mean_round_time_s"]  # 30 Mbps slower than 80
    res = runner.invoke(app, ["compare", str(tmp_path / "missing")])
    assert res.exit_code == 2 and "no records" in res.output


def test_failed_run_keeps_records_and_writes_summary(tmp_path, monkeypatch):
    """An engine that dies after round 1 leaves round 1's records, a summary saying why, and plots."""
    from fedbw.engines import estimate as est
    from fedbw.errors import RunError

    real = est.estimate_round
    calls = {"n": 0}

    def dying(plan, round_index, *a, **k):
        calls["n"] += 1
        if round_index == 2:
            raise RunError("link exploded")
        return real(plan, round_index, *a, **k)

    monkeypatch.setattr(est, "estimate_round", dying)
    res = runner.invoke(app, ["run", str(ROOT / "experiments/quickstart.toml"), "--engine", "estimate",
                              "--set", f'output_dir="{tmp_path}"'])
    assert res.exit_code == 1 and "link exploded" in res.output
    (run_dir,) = list(tmp_path.iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["rounds"] == 1 and "link exploded" in summary["stopped_early"]
    assert (run_dir / "rounds.png").exists()
