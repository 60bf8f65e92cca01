"""The hook points: mod stack and fit workflow follow the config."""

import pytest
from flwr.client.mod import secaggplus_mod
from flwr.server.workflow import SecAggPlusWorkflow

from fedbw.config import config_from_dict
from fedbw.errors import ConfigError
from fedbw.fl.measure import measure_mod
from fedbw.fl.settings import load_settings, write_plan_file
from fedbw.fl.wiring import client_mods, fit_workflow, privacy_budget, wrap_strategy


def _settings(tmp_path, **sections):
    tmp_path.mkdir(parents=True, exist_ok=True)
    return load_settings(str(write_plan_file(tmp_path, config_from_dict(sections), "cpu")))


def test_plain_fedavg_measures_and_uses_the_default_workflow(tmp_path):
    s = _settings(tmp_path)
    assert client_mods(s) == [measure_mod]
    assert fit_workflow(s) is None


def test_stock_secaggplus_is_flowers_own_with_config_parameters(tmp_path):
    s = _settings(tmp_path, privacy={"secagg": {"enabled": True, "num_shares": 5, "reconstruction_threshold": 3,
                                                "timeout_s": 30.0}})
    assert client_mods(s) == [measure_mod, secaggplus_mod]  # measure outermost: sees the masked reply
    wf = fit_workflow(s)
    assert isinstance(wf, SecAggPlusWorkflow)
    assert (wf.num_shares, wf.reconstruction_threshold, wf.timeout) == (5, 3, 30.0)


def test_packed_secagg_uses_fedbws_mod_and_workflow(tmp_path):
    from fedbw.fl.privacy import PackedSecAggPlusWorkflow, packed_secaggplus_mod

    s = _settings(tmp_path, privacy={"secagg": {"enabled": True, "mode": "packed"}})
    assert client_mods(s) == [measure_mod, packed_secaggplus_mod]
    assert isinstance(fit_workflow(s), PackedSecAggPlusWorkflow)


def test_dp_sits_inside_secagg_and_wraps_the_strategy(tmp_path):
    from flwr.client.mod import fixedclipping_mod
    from flwr.server.strategy import DifferentialPrivacyClientSideFixedClipping, FedAvg

    s = _settings(tmp_path, privacy={"secagg": {"enabled": True},
                                     "dp": {"enabled": True, "mode": "central-client-fixed"}})
    assert client_mods(s) == [measure_mod, secaggplus_mod, fixedclipping_mod]
    inner = FedAvg()
    assert isinstance(wrap_strategy(s, inner), DifferentialPrivacyClientSideFixedClipping)
    assert wrap_strategy(_settings(tmp_path / "plain"), inner) is inner


def test_unmeasured_runs_get_no_measure_mod(tmp_path):
    cfg = config_from_dict({"compression": {"codec": "fp16"}})
    s = load_settings(str(write_plan_file(tmp_path, cfg, "cpu", measure=False)))
    assert [m.__name__ for m in client_mods(s)] == ["compression_mod_fp16"]


def test_privacy_budget_caps_rounds_and_says_why(tmp_path):
    s = _settings(tmp_path, training={"rounds": 10},
                  privacy={"dp": {"enabled": True, "noise_multiplier": 0.8, "max_epsilon": 15.0}})
    budget = privacy_budget(s)
    eps = [budget.step(s.plan.sampled_clients(r)) for r in range(1, budget.rounds + 1)]
    assert 1 <= budget.rounds < 10 and eps[-1] <= 15.0
    assert budget.accountant.next_round_epsilon() > 15.0  # one more round would have exceeded the budget
    assert budget.stop_reason.startswith(f"stopped after round {budget.rounds}: the next round would exceed "
                                         "max_epsilon = 15")
    free = privacy_budget(_settings(tmp_path / "plain", training={"rounds": 4}))
    assert (free.rounds, free.stop_reason, free.step([0])) == (4, None, None)


def test_a_budget_below_one_round_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="max_epsilon"):
        privacy_budget(_settings(tmp_path, privacy={"dp": {"enabled": True, "noise_multiplier": 0.5,
                                                           "max_epsilon": 0.01}}))
