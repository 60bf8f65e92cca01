"""The plan file: written by engines, found by the apps through run_config or the environment."""

import pytest

from fedbw.config import config_from_dict
from fedbw.errors import RunError
from fedbw.fl.settings import PLAN_ENV, PLAN_KEY, load_settings, plan_path_from, write_plan_file
from fedbw.plan import build_plan


def test_plan_file_round_trips_the_plan_as_built(tmp_path):
    cfg = config_from_dict({"seed": 7, "clients": {"total": 6, "per_round": 3},
                            "network": {"overrides": [{"client": 2, "up_mbps": 9.0}]},
                            "privacy": {"dp": {"enabled": True, "noise_multiplier": 1.2}}})
    plan = build_plan(cfg, device="cpu")
    s = load_settings(str(write_plan_file(tmp_path, plan)))
    assert s.config == cfg and s.plan.clients == plan.clients and s.plan.samples == plan.samples
    assert (s.plan.rounds, s.plan.epsilons, s.plan.stop_reason) == (plan.rounds, plan.epsilons, plan.stop_reason)
    assert s.plan.clients[2].profile == "home-30*" and s.plan.clients[2].access.up_mbps == 9.0
    assert s.events_path == tmp_path.resolve() / "events.jsonl"
    assert s.device == "cpu" and s.measure and not s.synthetic


def test_apps_read_the_plan_and_never_rebuild_it(tmp_path, monkeypatch):
    """A ClientApp process per message must not redo the plan's work (sampling, RDP budget search)."""
    import fedbw.plan

    cfg = config_from_dict({"privacy": {"dp": {"enabled": True, "noise_multiplier": 1.0}}})
    path = write_plan_file(tmp_path, build_plan(cfg, device="cpu"))
    monkeypatch.setattr(fedbw.plan, "build_plan", lambda *a, **k: pytest.fail("the plan was rebuilt"))
    monkeypatch.setattr(fedbw.plan, "plan_budget", lambda *a, **k: pytest.fail("the budget was recomputed"))
    load_settings.cache_clear()
    assert load_settings(str(path)).plan.epsilons is not None


def test_a_plan_of_another_schema_is_refused(tmp_path):
    import json

    path = write_plan_file(tmp_path, build_plan(config_from_dict({}), device="cpu"))
    data = json.loads(path.read_text())
    data["plan"]["schema_version"] = 99
    path.write_text(json.dumps(data))
    load_settings.cache_clear()
    with pytest.raises(RunError, match="schema version 99"):
        load_settings(str(path))


def test_run_config_wins_over_environment(monkeypatch):
    monkeypatch.setenv(PLAN_ENV, "/from/env.json")
    assert plan_path_from({PLAN_KEY: "/from/run-config.json"}) == "/from/run-config.json"
    assert plan_path_from({}) == "/from/env.json"


def test_no_plan_is_a_clear_error(monkeypatch):
    monkeypatch.delenv(PLAN_ENV, raising=False)
    with pytest.raises(RunError, match="fedbw-plan"):
        plan_path_from({})
