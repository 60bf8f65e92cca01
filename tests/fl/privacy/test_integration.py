"""The three integration functions, run end to end on the loopback grid for every allowed combination."""

from __future__ import annotations

import numpy as np
import pytest
from flwr.client.mod import fixedclipping_mod, secaggplus_mod
from flwr.server.strategy import (
    DifferentialPrivacyClientSideFixedClipping,
    DifferentialPrivacyServerSideFixedClipping,
)
from flwr.server.workflow import SecAggPlusWorkflow

from fedbw.config import config_from_dict
from fedbw.fl.compress import CodecStrategy
from fedbw.fl.privacy import (
    PackedSecAggPlusWorkflow,
    build_client_mods,
    build_fit_workflow,
    packed_secaggplus_mod,
    wrap_strategy,
)
from fedbw.fl.privacy.bounds import GuardedSecAggPlusWorkflow, secagg_bounds_mod, seeded_numpy_mod

from .toyapp import fedavg, global_model, model, run

N = 5


def cfg(**sections):
    return config_from_dict({"engine": "estimate", "clients": {"total": N, "per_round": N}, **sections})


def test_mod_order_and_objects():
    c = cfg(privacy={"secagg": {"enabled": True, "mode": "packed"},
                     "dp": {"enabled": True, "mode": "central-client-fixed"}})
    seeded = seeded_numpy_mod(0, "seed")  # outermost: Flower's np.random draws become reproducible
    assert build_client_mods(c) == [seeded, packed_secaggplus_mod, secagg_bounds_mod, fixedclipping_mod]
    assert isinstance(build_fit_workflow(c), PackedSecAggPlusWorkflow)
    assert isinstance(wrap_strategy(c, fedavg(N)), DifferentialPrivacyClientSideFixedClipping)
    stock = cfg(privacy={"secagg": {"enabled": True}})
    assert build_client_mods(stock) == [seeded, secaggplus_mod, secagg_bounds_mod]
    wf = build_fit_workflow(stock)  # Flower's own protocol behind fedbw's wrap guard
    assert type(wf) is GuardedSecAggPlusWorkflow and isinstance(wf, SecAggPlusWorkflow)
    codec = cfg(compression={"codec": "int8"}, privacy={"dp": {"enabled": True}})
    mods = build_client_mods(codec)
    assert mods[0] == seeded and len(mods) == 2 and mods[1].__name__ == "compression_mod_int8"
    wrapped = wrap_strategy(codec, fedavg(N))
    assert isinstance(wrapped, CodecStrategy)
    assert isinstance(wrapped.strategy, DifferentialPrivacyServerSideFixedClipping)
    plain = cfg()
    assert build_client_mods(plain) == [] and build_fit_workflow(plain) is None


COMBOS = {
    "packed+client-fixed": {"privacy": {"secagg": {"enabled": True, "mode": "packed"},
                                        "dp": {"enabled": True, "mode": "central-client-fixed",
                                               "noise_multiplier": 0.1}}},
    "stock+local": {"privacy": {"secagg": {"enabled": True},
                                "dp": {"enabled": True, "mode": "local", "local_epsilon": 5.0}}},
    "packed+client-adaptive": {"clients": {"total": N, "per_round": N},
                               "privacy": {"secagg": {"enabled": True, "mode": "packed"},
                                           "dp": {"enabled": True, "mode": "central-client-adaptive",
                                                  "noise_multiplier": 0.2}}},
    "int8+server-fixed": {"compression": {"codec": "int8"},
                          "privacy": {"dp": {"enabled": True, "noise_multiplier": 0.1}}},
    "fp16+local": {"compression": {"codec": "fp16"},
                   "privacy": {"dp": {"enabled": True, "mode": "local", "local_epsilon": 5.0}}},
    "topk": {"compression": {"codec": "topk", "topk_fraction": 0.05}},
    "server-adaptive": {"privacy": {"dp": {"enabled": True, "mode": "central-server-adaptive",
                                           "noise_multiplier": 0.2}}},
}


@pytest.mark.parametrize("name", list(COMBOS))
def test_every_allowed_combination_runs_two_rounds(name):
    c = cfg(**COMBOS[name])
    grid, ctx = run(build_client_mods(c), build_fit_workflow(c), n=N, rounds=2,
                    strategy=wrap_strategy(c, fedavg(N)))
    out = global_model(ctx)
    assert all(np.all(np.isfinite(a)) for a in out)
    assert any(not np.array_equal(a, b) for a, b in zip(out, model(999)))  # the model moved
    if c.privacy.secagg.enabled and c.privacy.secagg.mode == "packed":
        assert all(a.dtype == np.float32 for a in out)
    assert sum(e.stage in ("train", "collect_masked_vectors") for e in grid.exchanges) == 2 * N


def test_dp_mod_outside_secagg_fails_which_is_why_it_goes_inside():
    with pytest.raises(Exception):
        run([fixedclipping_mod, secaggplus_mod], SecAggPlusWorkflow(num_shares=3, reconstruction_threshold=2),
            strategy=DifferentialPrivacyClientSideFixedClipping(fedavg(N), 0.1, 1.0, N))


def test_even_num_shares_below_per_round_is_rejected_because_flower_fails_on_it():
    from fedbw.errors import ConfigError

    with pytest.raises(IndexError):  # Flower 1.42: clients are told 4 shares, the ring gives them 5
        run([secaggplus_mod], SecAggPlusWorkflow(num_shares=4, reconstruction_threshold=2), n=5)
    with pytest.raises(ConfigError, match="must be odd"):
        cfg(privacy={"secagg": {"enabled": True, "num_shares": 4}})
    cfg(privacy={"secagg": {"enabled": True, "num_shares": 5}})  # = per_round: every client, fine
    cfg(privacy={"secagg": {"enabled": True, "num_shares": 3}})


def test_secagg_overflow_bound_is_enforced():
    from fedbw.errors import ConfigError

    with pytest.raises(ConfigError, match="would wrap"):
        config_from_dict({"engine": "estimate", "clients": {"total": 300, "per_round": 300},
                          "privacy": {"secagg": {"enabled": True, "quantization_range": 2**24}}})
    config_from_dict({"engine": "estimate", "clients": {"total": 255, "per_round": 255},
                      "privacy": {"secagg": {"enabled": True, "quantization_range": 2**24}}})


def test_local_dp_mod_is_calibrated_for_replace_one_sensitivity():
    from flwr.client.mod import LocalDpMod

    c = cfg(privacy={"dp": {"enabled": True, "mode": "local", "clipping_norm": 0.7, "local_epsilon": 0.5,
                            "local_delta": 1e-7}})
    (_, mod) = build_client_mods(c)
    assert isinstance(mod, LocalDpMod)
    assert (mod.clipping_norm, mod.sensitivity, mod.epsilon, mod.delta) == (0.7, 1.4, 0.5, 1e-7)
