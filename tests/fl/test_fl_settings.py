"""The plan file: written by engines, found by the apps through run_config or the environment."""

import pytest

from fedbw.config import config_from_dict
from fedbw.errors import RunError
from fedbw.fl.settings import PLAN_ENV, PLAN_KEY, load_settings, plan_path_from, write_plan_file


def test_plan_file_round_trips(tmp_path):
    cfg = config_from_dict({"seed": 7, "clients": {"total": 6, "per_round": 3}})
    path = write_plan_file(tmp_path, cfg, "cpu")
    s = load_settings(str(path))
    assert s.config == cfg
    assert s.plan.sampled_clients(2) == s.plan.sampled_clients(2)
    assert s.events_path == tmp_path.resolve() / "events.jsonl"
    assert s.device == "cpu" and s.measure and not s.synthetic


def test_run_config_wins_over_environment(monkeypatch):
    monkeypatch.setenv(PLAN_ENV, "/from/env.json")
    assert plan_path_from({PLAN_KEY: "/from/run-config.json"}) == "/from/run-config.json"
    assert plan_path_from({}) == "/from/env.json"


def test_no_plan_is_a_clear_error(monkeypatch):
    monkeypatch.delenv(PLAN_ENV, raising=False)
    with pytest.raises(RunError, match="fedbw-plan"):
        plan_path_from({})
