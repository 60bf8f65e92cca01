"""config → plan: sampling, compute, data sizes and the privacy budget, resolved once."""

import pytest

from fedbw.config import config_from_dict
from fedbw.errors import ConfigError
from fedbw.plan import build_plan
from fedbw.netmodel.spread import DRAWS


def test_sampling_is_seeded_and_without_replacement():
    cfg = config_from_dict({"clients": {"total": 20, "per_round": 7}, "seed": 3})
    a, b = build_plan(cfg), build_plan(cfg)
    for r in (1, 2, 3):
        assert a.sampled_clients(r) == b.sampled_clients(r)
        assert len(set(a.sampled_clients(r))) == 7
    other = build_plan(config_from_dict({"clients": {"total": 20, "per_round": 7}, "seed": 4}))
    assert any(a.sampled_clients(r) != other.sampled_clients(r) for r in (1, 2, 3))


def test_compute_estimate_from_device_profile():
    cfg = config_from_dict({"engine": "estimate", "model": {"name": "resnet50"},
                            "data": {"samples_per_client": 100}, "clients": {"device_profile": "desktop-gpu"}})
    plan = build_plan(cfg)
    assert plan.clients[0].est_compute_s == pytest.approx(100 * 3 * 8_178_368_512 / 10e12)


def test_digits_split_evenly():
    plan = build_plan(config_from_dict({"clients": {"total": 10, "per_round": 5}}))
    assert plan.clients[0].num_samples == int(1797 * 0.8) // 10


def test_the_plan_carries_the_budget_rounds_to_run_and_epsilon_per_round():
    cfg = config_from_dict({"engine": "estimate", "training": {"rounds": 10},
                            "privacy": {"dp": {"enabled": True, "noise_multiplier": 0.8, "max_epsilon": 15.0}}})
    plan = build_plan(cfg)
    assert 1 <= plan.rounds < 10 and len(plan.epsilons) == plan.rounds and plan.epsilons[-1] <= 15.0
    assert plan.stop_reason.startswith(f"stopped after round {plan.rounds}: the next round would exceed "
                                       "max_epsilon = 15")
    assert len(plan.samples) == 10  # every configured round is sampled; only plan.rounds of them run
    free = build_plan(config_from_dict({"training": {"rounds": 4}}))
    assert (free.rounds, free.epsilons, free.stop_reason) == (4, None, None)


def test_a_budget_below_one_round_is_a_config_error():
    with pytest.raises(ConfigError, match="max_epsilon"):
        build_plan(config_from_dict({"privacy": {"dp": {"enabled": True, "noise_multiplier": 0.5,
                                                        "max_epsilon": 0.01}}}))


def test_the_collector_is_paused_only_inside_the_block_and_restored_as_it_was():
    import gc

    from fedbw.plan import collection_paused

    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
        with collection_paused():  # nested: the outer block's pause holds
            pass
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == 0  # nothing left frozen
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()  # a caller's own pause is left alone
    finally:
        gc.enable()
    with pytest.raises(ValueError), collection_paused():
        raise ValueError("an error inside still restores the collector")
    assert gc.isenabled()


def test_the_deployment_clock_averages_the_unknown_phases_unless_told_otherwise():
    """The default model is the mean round over Flower's unknown poll phases (8 lanes); "expected" lays one
    round at their mean, "sampled" draws them; framework = "none" has no clock."""
    base = {"engine": "estimate", "clients": {"total": 4, "per_round": 2, "compute": "synthetic"}}
    clock = build_plan(config_from_dict(base)).deployment_clock()
    assert clock is not None and clock.phase == "averaged" and clock.central == 8
    # the shipped calibration gives intervals: the spread lanes lay the same 8 phases out per draw of its constants
    assert len(clock.lanes) == 8 * (1 + DRAWS)
    one = build_plan(config_from_dict({**base, "deployment": {"poll_phase": "expected"}})).deployment_clock()
    assert one is not None and one.central == 1 and len(one.lanes) == 1 + DRAWS
    assert build_plan(config_from_dict({**base, "framework": "none"})).deployment_clock() is None
    with pytest.raises(ConfigError, match="poll_phase"):
        config_from_dict({**base, "deployment": {"poll_phase": "median"}})
