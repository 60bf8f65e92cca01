"""ε accounting: published reference vectors, dp-accounting computed directly, and the per-round budget API."""

from __future__ import annotations

import math

import pytest

from fedbw.config import config_from_dict
from fedbw.config.accounting import config_accountant, config_budget, config_epsilons
from fedbw.errors import ConfigError
from fedbw.privacy.accounting import (
    CentralDp,
    PrivacyAccountant,
    central_epsilon,
    advanced_composition_epsilon,
    basic_composition_epsilon,
    local_noise_multiplier,
    rdp_gaussian_epsilon,
)


def test_opacus_rdp_reference_vector():
    # Opacus tests/accountants_test.py (RDP): σ = 1.5, q = 0.04, 2250 steps, δ = 1e-5 → ε ≈ 7.3293.
    assert rdp_gaussian_epsilon(1.5, 2250, 1e-5, sample_rate=0.04) == pytest.approx(7.3293, abs=1e-3)


@pytest.mark.parametrize("sigma, q, steps", [(1.5, 0.04, 2250), (1.0, 5 / 6, 3), (0.3, 1.0, 7)])
def test_scaled_one_step_rdp_equals_dp_accountings_own_composition(sigma, q, steps):
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant

    event = dp_event.GaussianDpEvent(sigma)
    acc = rdp_privacy_accountant.RdpAccountant()
    acc.compose(dp_event.PoissonSampledDpEvent(q, event) if q < 1 else event, steps)
    assert rdp_gaussian_epsilon(sigma, steps, 1e-5, sample_rate=q) == acc.get_epsilon(1e-5)


def _direct(event, relation, steps, delta=1e-5):
    """dp-accounting's own accountant, composing the event ``steps`` times."""
    from dp_accounting.rdp import rdp_privacy_accountant

    acc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation)
    acc.compose(event, steps)
    return acc.get_epsilon(delta)


#: (population, per_round, z, rounds): cross-device-ish, the privacy-overhead study, tiny, near-full.
REFERENCE = [(1000, 50, 1.0, 30), (6, 5, 1.0, 3), (10, 5, 1.1, 3), (100, 99, 2.0, 5), (10_000, 100, 0.8, 200)]


@pytest.mark.parametrize("population, per_round, z, rounds", REFERENCE)
def test_fixed_sampling_is_dp_accountings_sampled_without_replacement_under_replace_one(population, per_round, z,
                                                                                      rounds):
    from dp_accounting import dp_event
    from dp_accounting.rdp.rdp_privacy_accountant import NeighborRel

    mech = CentralDp.of("fixed", population, per_round, z)
    # replace-one moves the mean of per_round clipped updates by 2C / per_round; Flower's noise std is
    # z·C / per_round: the Gaussian's noise multiplier relative to that sensitivity is z / 2.
    event = dp_event.SampledWithoutReplacementDpEvent(population, per_round, dp_event.GaussianDpEvent(z / 2))
    assert central_epsilon(mech, [None] * rounds, 1e-5) == pytest.approx(
        _direct(event, NeighborRel.REPLACE_ONE, rounds), rel=1e-12)


@pytest.mark.parametrize("population, per_round, z, rounds", REFERENCE)
def test_poisson_sampling_is_dp_accountings_poisson_event_under_add_remove(population, per_round, z, rounds):
    from dp_accounting import dp_event
    from dp_accounting.rdp.rdp_privacy_accountant import NeighborRel

    mech = CentralDp.of("poisson", population, per_round, z)
    event = dp_event.PoissonSampledDpEvent(per_round / population, dp_event.GaussianDpEvent(z))
    assert central_epsilon(mech, [None] * rounds, 1e-5) == pytest.approx(
        _direct(event, NeighborRel.ADD_OR_REMOVE_ONE, rounds), rel=1e-12)


def test_fixed_rounds_where_fewer_clients_report_spend_more():
    mech = CentralDp.of("fixed", 100, 10, 1.0)
    full = central_epsilon(mech, [None, None, None], 1e-5)
    assert central_epsilon(mech, [10, 10, 10], 1e-5) == pytest.approx(full, rel=1e-12)
    dropped = central_epsilon(mech, [10, 7, 10], 1e-5)  # 3 of 10 lost: the mean of 7 moves by 2C/7
    assert dropped > full
    assert mech.effective_noise_multiplier(7) == pytest.approx(1.0 * 7 / 20)
    assert central_epsilon(mech, [10, 0, 10], 1e-5) == pytest.approx(central_epsilon(mech, [10, 10], 1e-5))
    pois = CentralDp.of("poisson", 100, 10, 1.0)  # fixed denominator: the cohort never changes the sensitivity
    assert pois.effective_noise_multiplier(3) == pois.effective_noise_multiplier(17) == 1.0


def test_accountant_composes_the_cohorts_the_server_reports():
    acc = PrivacyAccountant(mode="central", delta=1e-5, central=CentralDp.of("fixed", 100, 10, 1.0), max_epsilon=50)
    acc.step(cohort=10)
    acc.step(cohort=6)
    mech = acc.central
    assert acc.epsilon == pytest.approx(central_epsilon(mech, [10, 6], 1e-5))
    assert acc.next_round_epsilon() == pytest.approx(central_epsilon(mech, [10, 6, 10], 1e-5))
    assert acc.epsilon > acc.epsilon_after(2)  # more than the plan predicted for two rounds


def test_central_accountant_steps_match_the_closed_count():
    acc = PrivacyAccountant(mode="central", delta=1e-5, central=CentralDp.of("poisson", 2500, 100, 1.5))
    assert acc.epsilon_after(2250) == pytest.approx(7.3293, abs=1e-3)
    assert acc.epsilon == 0.0
    steps = [acc.step() for _ in range(3)]
    assert steps == [pytest.approx(rdp_gaussian_epsilon(1.5, r, 1e-5, 0.04)) for r in (1, 2, 3)]
    assert acc.rounds == 3 and acc.spent().epsilon == steps[-1]


def test_subsampling_amplifies_and_epsilon_grows_with_rounds():
    full = rdp_gaussian_epsilon(1.0, 10, 1e-5, sample_rate=1.0)
    sub = rdp_gaussian_epsilon(1.0, 10, 1e-5, sample_rate=0.1)
    assert sub < full / 3
    eps = [rdp_gaussian_epsilon(1.0, r, 1e-5, sample_rate=0.5) for r in range(0, 6)]
    assert eps[0] == 0.0
    assert all(a < b for a, b in zip(eps, eps[1:]))


def test_max_epsilon_stops_before_exceeding():
    acc = PrivacyAccountant(mode="central", delta=1e-5, central=CentralDp.of("poisson", 10, 5, 1.0), max_epsilon=8.0)
    ran = 0
    while not acc.next_round_exceeds():
        acc.step()
        ran += 1
        assert ran < 1000
    assert acc.epsilon <= 8.0 < acc.next_round_epsilon()
    assert ran == acc.max_rounds() and ran > 0


def test_local_basic_and_advanced_composition_by_hand():
    assert basic_composition_epsilon(0.5, 1e-7, 10, 1e-5) == pytest.approx(5.0)
    assert basic_composition_epsilon(0.5, 1e-6, 11, 1e-5) == math.inf  # 11·δ₀ > δ
    k, e0, d0, d = 400, 0.1, 1e-9, 1e-5
    slack = d - k * d0
    by_hand = math.sqrt(2 * k * math.log(1 / slack)) * e0 + k * e0 * (math.exp(e0) - 1)
    assert advanced_composition_epsilon(e0, d0, k, d) == pytest.approx(by_hand)
    assert by_hand < k * e0  # advanced beats basic for many small releases
    assert advanced_composition_epsilon(e0, d0, 2, d) == pytest.approx(2 * e0)  # basic wins for few


def test_local_rdp_is_tighter_than_basic_and_single_release_within_promise():
    z = local_noise_multiplier(0.5, 1e-6)
    assert z == pytest.approx(math.sqrt(2 * math.log(1.25e6)) / 0.5)
    one = rdp_gaussian_epsilon(z, 1, 1e-6)
    assert one <= 0.5  # RDP of the calibrated Gaussian never promises less than (ε₀, δ₀)
    acc = PrivacyAccountant(mode="local", delta=1e-5, local_epsilon=0.5, local_delta=1e-7)
    for _ in range(20):
        acc.step()
    assert acc.epsilon < 20 * 0.5


def test_local_tracks_the_client_that_released_most():
    acc = PrivacyAccountant(mode="local", delta=1e-5, local_epsilon=0.5, local_delta=1e-8,
                            local_composition="basic")
    acc.step([0, 1])
    acc.step([1, 2])
    assert acc.epsilon == pytest.approx(1.0)  # client 1 released twice
    acc.step([3])
    assert acc.epsilon == pytest.approx(1.0)
    assert acc.next_round_epsilon() == pytest.approx(1.5)
    acc.step(None)  # unknown participants: assume the worst
    assert acc.epsilon == pytest.approx(1.5)


def test_impossible_settings_raise():
    with pytest.raises(ConfigError, match="noise_multiplier"):
        PrivacyAccountant(mode="central", delta=1e-5, central=CentralDp.of("fixed", 10, 5, 0.0))
    with pytest.raises(ConfigError, match="target_delta"):
        PrivacyAccountant(mode="central", delta=0.0, central=CentralDp.of("fixed", 10, 5, 1.0))


def _cfg(sampling="poisson", **dp):
    return config_from_dict({"engine": "estimate", "clients": {"total": 10, "per_round": 5, "sampling": sampling},
                             "privacy": {"dp": {"enabled": True, **dp}}})


def test_from_config_central_and_local():
    acc = config_accountant(_cfg(noise_multiplier=1.2))
    assert acc is not None and acc.mode == "central" and acc.central == CentralDp.of("poisson", 10, 5, 1.2)
    assert config_accountant(_cfg("fixed", noise_multiplier=1.2)).central.sampler.kind == "fixed"
    assert config_accountant(config_from_dict({"engine": "estimate"})) is None
    loc = config_accountant(_cfg(mode="local", local_epsilon=0.5, local_accounting="advanced"))
    assert loc.mode == "local" and loc.local_composition == "advanced"


def test_config_rejects_impossible_dp():
    with pytest.raises(ConfigError, match="noise_multiplier"):
        _cfg(noise_multiplier=0.0)
    with pytest.raises(ConfigError, match="per_round/10"):
        _cfg(mode="central-client-adaptive", noise_multiplier=1.0)
    with pytest.raises(ConfigError, match="local_accounting"):
        _cfg(mode="local", local_epsilon=2.0, local_accounting="basic")
    with pytest.raises(ConfigError, match="max_epsilon"):
        config_accountant(_cfg(noise_multiplier=0.5, max_epsilon=0.01))


def test_schedule_and_rounds_within_budget():
    c = config_from_dict({"engine": "estimate", "clients": {"total": 10, "per_round": 5, "sampling": "poisson"},
                          "training": {"rounds": 20},
                          "privacy": {"dp": {"enabled": True, "noise_multiplier": 1.0, "max_epsilon": 8.0}}})
    sched = config_epsilons(c)
    assert len(sched) == 20 and all(a < b for a, b in zip(sched, sched[1:]))
    n = config_budget(c).rounds
    assert 0 < n < 20 and sched[n - 1] <= 8.0 < sched[n]
    assert config_budget(_cfg(noise_multiplier=1.0)).rounds == 3  # no budget: training.rounds (default 3)
    assert config_epsilons(config_from_dict({"engine": "estimate"})) == []


def _local(rounds, max_epsilon=None):
    return config_from_dict({"engine": "estimate", "seed": 3, "clients": {"total": 6, "per_round": 2},
                             "training": {"rounds": rounds},
                             "privacy": {"dp": {"enabled": True, "mode": "local", "local_epsilon": 0.5,
                                                "local_delta": 1e-7, "local_accounting": "basic",
                                                "max_epsilon": max_epsilon}}})


def test_local_schedule_follows_the_plans_sampling_and_the_worst_case_without_it():
    from fedbw.plan import build_plan

    c = _local(8)
    plan = build_plan(c)
    released: dict[int, int] = {}
    expected = []
    for r in range(1, 9):  # basic composition: ε = ε₀ × (releases of the client that released most)
        for cid in plan.sampled_clients(r):
            released[cid] = released.get(cid, 0) + 1
        expected.append(0.5 * max(released.values()))
    assert config_epsilons(c, sampled=plan.sampled_clients) == pytest.approx(expected)
    assert config_epsilons(c) == pytest.approx([0.5 * r for r in range(1, 9)])  # worst case: one client every round
    assert expected[-1] < 4.0  # 2 of 6 per round: nobody is sampled in all 8 rounds with this seed


def test_budget_stop_names_the_round_and_the_epsilon_it_would_reach():
    c = config_from_dict({"engine": "estimate", "clients": {"total": 10, "per_round": 5, "sampling": "poisson"},
                          "training": {"rounds": 20},
                          "privacy": {"dp": {"enabled": True, "noise_multiplier": 1.0, "max_epsilon": 8.0}}})
    budget = config_budget(c)
    sched = config_epsilons(c)
    assert budget.epsilons == sched[:budget.rounds] and sched[budget.rounds] > 8.0
    assert budget.stop_reason == (f"stopped after round {budget.rounds}: the next round would exceed max_epsilon = 8 "
                                  f"(ε would be {sched[budget.rounds]:.4g})")
    free = config_budget(_cfg(noise_multiplier=1.0))
    assert free.stop_reason is None and len(free.epsilons) == free.rounds == 3


def test_estimate_engine_reports_the_servers_epsilon_and_stops_at_the_same_round():
    from fedbw.engines.estimate import run_estimate
    from fedbw.plan import build_plan

    c = _local(8, max_epsilon=1.6)
    plan = build_plan(c)
    full = config_epsilons(c, sampled=plan.sampled_clients)
    res = run_estimate(plan, "t")
    assert plan.rounds == len(res.rounds) < 8 and plan.stop_reason is not None
    assert res.stopped_early == plan.stop_reason
    assert [r.epsilon for r in res.rounds] == full[:plan.rounds] == plan.epsilons
    assert res.rounds[-1].epsilon <= 1.6 < full[plan.rounds]
    free = run_estimate(build_plan(_local(3)), "t")
    assert len(free.rounds) == 3 and free.stopped_early is None and free.rounds[0].epsilon == 0.5


@pytest.mark.parametrize("sampling, population, per_round, z, rounds, expected", [
    ("fixed", 10, 5, 1.0, (1, 3, 10), (10.110, 20.155, 43.555)),
    ("poisson", 10, 5, 1.0, (1, 3, 10), (3.894, 6.482, 11.544)),
    ("fixed", 1000, 50, 1.0, (100,), (34.26,)),
    ("poisson", 1000, 50, 1.0, (100,), (4.04,)),
    ("fixed", 1000, 50, 2.0, (100,), (6.47,)),
])
def test_the_table_in_docs_privacy(sampling, population, per_round, z, rounds, expected):
    """docs/privacy.md, "Checks": the ε table is these numbers."""
    mech = CentralDp.of(sampling, population, per_round, z)
    got = [central_epsilon(mech, [None] * r, 1e-5) for r in rounds]
    assert got == pytest.approx(list(expected), abs=5e-3)


def test_the_local_rows_of_the_table_in_docs_privacy():
    rdp = PrivacyAccountant(mode="local", delta=1e-5, local_epsilon=0.5, local_delta=1e-7)
    basic = PrivacyAccountant(mode="local", delta=1e-5, local_epsilon=0.5, local_delta=1e-7,
                              local_composition="basic")
    assert [rdp.epsilon_after(k) for k in (1, 10, 50)] == pytest.approx([0.325, 1.130, 2.744], abs=5e-4)
    assert [basic.epsilon_after(k) for k in (1, 10, 50)] == pytest.approx([0.5, 5.0, 25.0])
