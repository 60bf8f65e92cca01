"""The hook points: mod stack and fit workflow follow the config."""

from flwr.client.mod import secaggplus_mod
from flwr.server.workflow import SecAggPlusWorkflow

from fedbw.fl.privacy.bounds import secagg_bounds_mod, seeded_numpy_mod

from fedbw.config import config_from_dict
from fedbw.fl.measure import measure_mod
from fedbw.fl.settings import load_settings, write_plan_file
from fedbw.fl.wiring import client_mods, fit_workflow, wrap_strategy
from fedbw.plan import build_plan


def _settings(tmp_path, **sections):
    tmp_path.mkdir(parents=True, exist_ok=True)
    return load_settings(str(write_plan_file(tmp_path, build_plan(config_from_dict(sections), device="cpu"))))


def test_plain_fedavg_measures_and_uses_the_default_workflow(tmp_path):
    s = _settings(tmp_path)
    assert client_mods(s) == [measure_mod]
    assert fit_workflow(s) is None


def test_stock_secaggplus_is_flowers_own_with_config_parameters(tmp_path):
    s = _settings(tmp_path, privacy={"secagg": {"enabled": True, "num_shares": 5, "reconstruction_threshold": 3,
                                                "timeout_s": 30.0}})
    # measure outermost: sees the masked reply; the seeding mod next, the bounds mod right inside SecAgg+
    assert client_mods(s) == [measure_mod, seeded_numpy_mod(0), secaggplus_mod, secagg_bounds_mod]
    wf = fit_workflow(s)
    assert isinstance(wf, SecAggPlusWorkflow)
    assert (wf.num_shares, wf.reconstruction_threshold, wf.timeout) == (5, 3, 30.0)


def test_packed_secagg_uses_fedbws_mod_and_workflow(tmp_path):
    from fedbw.fl.privacy import PackedSecAggPlusWorkflow, packed_secaggplus_mod

    s = _settings(tmp_path, privacy={"secagg": {"enabled": True, "mode": "packed"}})
    assert client_mods(s) == [measure_mod, seeded_numpy_mod(0), packed_secaggplus_mod, secagg_bounds_mod]
    assert isinstance(fit_workflow(s), PackedSecAggPlusWorkflow)


def test_dp_sits_inside_secagg_and_wraps_the_strategy(tmp_path):
    from flwr.client.mod import fixedclipping_mod
    from flwr.server.strategy import DifferentialPrivacyClientSideFixedClipping, FedAvg

    s = _settings(tmp_path, privacy={"secagg": {"enabled": True},
                                     "dp": {"enabled": True, "mode": "central-client-fixed"}})
    assert client_mods(s) == [measure_mod, seeded_numpy_mod(0), secaggplus_mod, secagg_bounds_mod, fixedclipping_mod]
    inner = FedAvg()
    assert isinstance(wrap_strategy(s, inner), DifferentialPrivacyClientSideFixedClipping)
    assert wrap_strategy(_settings(tmp_path / "plain"), inner) is inner


def test_unmeasured_runs_get_no_measure_mod(tmp_path):
    cfg = config_from_dict({"compression": {"codec": "fp16"}})
    s = load_settings(str(write_plan_file(tmp_path, build_plan(cfg, device="cpu"), measure=False)))
    assert [m.__name__ for m in client_mods(s)] == ["compression_mod_fp16"]
