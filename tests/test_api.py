"""fedbw from Python: run, estimate, load and config give what the CLI gives, typed, and DataFrames."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fedbw
from fedbw.cli import app
from fedbw.errors import ConfigError

QUICKSTART = Path(__file__).resolve().parents[1] / "experiments" / "quickstart.toml"


def test_estimate_runs_through_the_runner_and_loads_back(tmp_path: Path) -> None:
    run = fedbw.estimate(QUICKSTART, set={"output_dir": str(tmp_path), "network.profile": "home-30",
                                          "training.rounds": 2})
    assert run.run_dir is not None and (run.run_dir / "summary.json").is_file()  # the runner's finish
    assert [r.round for r in run.rounds] == [1, 2] and run.summary.rounds == 2
    assert run.config is not None and run.config["engine"] == "estimate"
    back = fedbw.load(run.run_dir)
    assert back.rounds == run.rounds and back.clients == run.clients and back.summary == run.summary
    frame = back.rounds_frame()
    assert list(frame["round"]) == [1, 2] and "round_time_s" in frame and "comm_fraction" in frame
    clients = back.clients_frame()
    assert len(clients) == sum(len(c.stages) for c in back.clients) and {"t_up_s", "stage"} <= set(clients)


def test_the_cli_and_the_api_write_the_same_records(tmp_path: Path) -> None:
    sets = {"output_dir": str(tmp_path / "api"), "training.rounds": 2, "seed": 3}
    api_run = fedbw.run(QUICKSTART, engine="estimate", set=sets)
    res = CliRunner().invoke(app, ["run", str(QUICKSTART), "--engine", "estimate", "--json",
                                   "--set", f"output_dir='{tmp_path / 'cli'}'", "--set", "training.rounds=2",
                                   "--set", "seed=3"])
    assert res.exit_code == 0, res.output
    cli_rounds = json.loads(res.output[res.output.index("["):])
    assert [r["round_time_s"] for r in cli_rounds] == [r.round_time_s for r in api_run.rounds]


def test_resolve_config_takes_a_path_a_dict_or_nothing_and_says_what_is_wrong(tmp_path: Path) -> None:
    assert fedbw.resolve_config().engine == fedbw.resolve_config({}).engine  # the embedded defaults
    assert fedbw.resolve_config({"clients": {"total": 7, "per_round": 7}}).clients.total == 7
    assert fedbw.resolve_config(QUICKSTART, set=["clients.total=20"]).clients.total == 20
    with pytest.raises(ConfigError, match="clients.total"):
        fedbw.resolve_config(set={"clients.total": -1})
    with pytest.raises(ConfigError, match="wrap it in a list"):
        fedbw.resolve_config(set="clients.total=3")
    with pytest.raises(ConfigError, match="TOML path, a dict"):
        fedbw.resolve_config(42)
    with pytest.raises(ConfigError, match="no records"):
        fedbw.load(tmp_path)


def test_import_fedbw_stays_light() -> None:
    import subprocess
    import sys

    code = "import sys, fedbw; print('fedbw.api' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
    with pytest.raises(AttributeError):
        fedbw.nothing_here  # noqa: B018
