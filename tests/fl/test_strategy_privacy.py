"""The server's privacy duties: accounting the rounds as they ran, Poisson's fixed denominator and its
noise-only empty rounds, reproducible server noise, and the privacy record in every round_end."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from flwr.app import ConfigRecord, RecordDict
from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.compat.common import recorddict_compat as compat
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
from flwr.server.workflow.constant import Key as WorkflowKey

from fedbw.config import config_from_dict
from fedbw.fl.events import EventLog
from fedbw.fl.server_app import plan_fit_step
from fedbw.fl.settings import load_settings, write_plan_file
from fedbw.fl.strategy import PlanFedAvg, RoundState
from fedbw.plan import build_plan
from fedbw.privacy.accounting import CentralDp, central_epsilon

from .privacy.fedbw_loopback import ends, run_apps

SYNTH = {"engine": "simulate", "device": "cpu", "seed": 3, "model": {"name": "small-cnn"},
         "data": {"dataset": "synthetic"}}


def _settings(tmp_path, cfg):
    tmp_path.mkdir(parents=True, exist_ok=True)
    return load_settings(str(write_plan_file(tmp_path, build_plan(cfg, device="cpu"))))


def _poisson(per_round=2, total=8, rounds=6, z=1.0):
    return config_from_dict({**SYNTH, "clients": {"total": total, "per_round": per_round, "sampling": "poisson",
                                                  "compute": "synthetic"},
                             "training": {"rounds": rounds},
                             "privacy": {"dp": {"enabled": True, "mode": "central-server-fixed",
                                                "noise_multiplier": z}}})


def test_poisson_aggregates_with_a_fixed_denominator(tmp_path):
    s = _settings(tmp_path, _poisson(per_round=4))
    strategy = PlanFedAvg(s, EventLog(tmp_path / "e.jsonl"), RoundState(), {c: c for c in range(8)}, None)
    g = [np.zeros(3, dtype=np.float32)]
    strategy._global = g  # what configure_fit saw
    results = [(SimpleNamespace(node_id=c), FitRes(Status(Code.OK, ""), ndarrays_to_parameters([np.full(3, v, np.float32)]),
                                                    10, {}))
               for c, v in ((0, 1.0), (1, 3.0))]
    params, _ = strategy.aggregate_fit(1, results, [])
    (out,) = parameters_to_ndarrays(params)
    assert np.allclose(out, (1.0 + 3.0) / 4)  # Σ updates / per_round, not their mean (2.0)
    assert out.dtype == np.float32
    assert strategy.rounds[1].cohort == 2 and strategy.rounds[1].participants == [0, 1]


def _context(round_index: int, arrays: list[np.ndarray]):
    state = RecordDict({MAIN_CONFIGS_RECORD: ConfigRecord({WorkflowKey.CURRENT_ROUND: round_index}),
                        MAIN_PARAMS_RECORD: compat.parameters_to_arrayrecord(ndarrays_to_parameters(arrays), True)})
    return SimpleNamespace(state=state)


def _params(ctx) -> np.ndarray:
    return parameters_to_ndarrays(compat.arrayrecord_to_parameters(ctx.state.array_records[MAIN_PARAMS_RECORD],
                                                                   True))[0]


def test_an_empty_poisson_round_still_releases_the_noise(tmp_path):
    cfg = _poisson(per_round=1, total=10, rounds=12, z=2.0)
    s = _settings(tmp_path, cfg)
    empty = next(r for r in range(1, 13) if not s.plan.sampled_clients(r))
    full = next(r for r in range(1, 13) if s.plan.sampled_clients(r))
    strategy = PlanFedAvg(s, EventLog(tmp_path / "e.jsonl"), RoundState(), {c: c for c in range(10)}, None)
    step = plan_fit_step(s, strategy, SimpleNamespace(clipping_norm=0.5), lambda grid, ctx: None)
    zeros = [np.zeros(20_000, dtype=np.float32)]
    ctx = _context(empty, zeros)
    step(None, ctx)
    noise = _params(ctx)
    assert noise.std() == pytest.approx(2.0 * 0.5 / 1, rel=0.03)  # Flower's std z·C / per_round
    again = _context(empty, zeros)
    step(None, again)
    assert np.array_equal(_params(again), noise)  # drawn from the seed: reproducible
    ctx = _context(full, zeros)
    step(None, ctx)  # a round with clients: the DP wrapper noised its aggregate; nothing added here
    assert not _params(ctx).any()


@pytest.mark.slow  # ≈ 6 s: fedbw's apps on the loopback grid
def test_poisson_run_reports_each_rounds_cohort_and_the_plans_epsilon(tmp_path):
    cfg = _poisson(per_round=1, total=6, rounds=5)
    plan, _, events = run_apps(tmp_path, cfg)
    got = ends(events)
    assert [e["round"] for e in got] == [1, 2, 3, 4, 5]
    assert [e["epsilon"] for e in got] == pytest.approx(plan.epsilons, rel=1e-12)
    assert any(not plan.sampled_clients(r) for r in range(1, 6))  # this seed draws an empty round
    for e in got:
        p = e["privacy"]
        assert (p["sampling"], p["adjacency"], p["delta"]) == ("poisson", "add/remove", 1e-5)
        assert p["cohort"] == len(plan.sampled_clients(e["round"])) and p["noise_multiplier"] == 1.0


def _secagg_dp(rounds=3, max_epsilon=None):
    dp = {"enabled": True, "mode": "central-client-fixed", "noise_multiplier": 1.0, "clipping_norm": 5.0}
    if max_epsilon is not None:
        dp["max_epsilon"] = max_epsilon
    return config_from_dict({**SYNTH, "clients": {"total": 6, "per_round": 5, "compute": "synthetic"},
                             "training": {"rounds": rounds},
                             "privacy": {"secagg": {"enabled": True, "mode": "packed", "timeout_s": 0.2}, "dp": dp}})


def _drop_one_in_round_1(plan):
    lost = {}

    def drop(node_id, group, stage):
        if group == "1" and stage == "collect_masked_vectors" and not lost:
            lost[node_id] = True  # after share exchange: its shares are out, its vector never comes
        return group == "1" and node_id in lost and stage in ("collect_masked_vectors", "unmask")

    return drop


@pytest.mark.slow  # ≈ 6 s: fedbw's apps on the loopback grid
def test_a_dropout_is_accounted_with_the_cohort_that_reported(tmp_path):
    cfg = _secagg_dp()
    plan, _, events = run_apps(tmp_path, cfg, drop=_drop_one_in_round_1(None))
    got = ends(events)
    mech = CentralDp.of("fixed", 6, 5, 1.0)
    assert [e["privacy"]["cohort"] for e in got] == [4, 5, 5]
    assert got[0]["privacy"]["noise_multiplier"] == pytest.approx(1.0 * 4 / 10)
    assert [e["epsilon"] for e in got] == pytest.approx([central_epsilon(mech, [4, 5, 5][:k], 1e-5)
                                                         for k in (1, 2, 3)], rel=1e-12)
    assert got[0]["epsilon"] > plan.epsilons[0]  # the plan assumed all five would report
    assert all(e["privacy"]["secagg_wrapped"] == 0 for e in got)
    assert all(isinstance(e["privacy"]["secagg_clipped"], int) for e in got)


@pytest.mark.slow  # ≈ 6 s: fedbw's apps on the loopback grid
def test_dropouts_that_spend_more_than_planned_stop_the_run_earlier(tmp_path):
    mech = CentralDp.of("fixed", 6, 5, 1.0)
    planned3 = central_epsilon(mech, [None] * 3, 1e-5)
    actual3 = central_epsilon(mech, [4, 5, 5], 1e-5)
    cap = (planned3 + actual3) / 2  # the plan fits 3 rounds; after the dropout the third would not
    cfg = _secagg_dp(max_epsilon=cap)
    plan, _, events = run_apps(tmp_path, cfg, drop=_drop_one_in_round_1(None))
    assert plan.rounds == 3 and plan.stop_reason is None
    assert [e["round"] for e in ends(events)] == [1, 2]
    end = events[-1]
    assert end["event"] == "end" and end["rounds"] == 2
    assert "stopped after round 2" in end["stopped_early"] and "actually run" in end["stopped_early"]
