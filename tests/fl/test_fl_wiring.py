"""The hook points: mod stack and fit workflow follow the config."""

import pytest
from flwr.client.mod import secaggplus_mod
from flwr.server.workflow import SecAggPlusWorkflow

from fedbw.config import config_from_dict
from fedbw.errors import ConfigError
from fedbw.fl.measure import measure_mod
from fedbw.fl.settings import load_settings, write_plan_file
from fedbw.fl.wiring import client_mods, fit_workflow


def _settings(tmp_path, **sections):
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


def test_packed_secagg_is_refused_until_wired(tmp_path):
    s = _settings(tmp_path, privacy={"secagg": {"enabled": True, "mode": "packed"}})
    with pytest.raises(ConfigError, match="packed"):
        client_mods(s)
