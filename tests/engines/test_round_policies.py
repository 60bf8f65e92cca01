"""``[round]`` in the estimate engine (issue 32.2): over-selection samples more clients, the training stage
closes at enough replies or at the deadline, late clients are recorded with their wasted uplink, and a
round with too few replies is abandoned; under SecAgg+ a late client is a dropout the unmask stage
reconstructs; with DP, ε is accounted for the replies that came in time; the settings that do not run it
say so."""

from __future__ import annotations

import re

import pytest

from fedbw.config import config_from_dict
from fedbw.engines.estimate import run_estimate
from fedbw.errors import ConfigError
from fedbw.plan import build_plan


def _cfg(**round_keys: object) -> dict:
    return {"name": "policy", "engine": "estimate", "model": {"name": "resnet18"},
            "clients": {"total": 20, "per_round": 4, "compute": "synthetic"}, "training": {"rounds": 3},
            "network": {"mix": [{"profile": "home-80", "share": 3}, {"profile": "mobile-4g", "share": 1}]},
            "round": round_keys}


def _run(**round_keys: object):
    return run_estimate(build_plan(config_from_dict(_cfg(**round_keys))), "t")


def test_without_a_policy_every_sampled_client_counts() -> None:
    res = _run()
    assert all(r.num_clients == 4 and r.late_clients == 0 and r.replies == 4 for r in res.rounds)
    assert not any(c.late for c in res.clients)


def test_over_selection_samples_more_and_uses_the_first_replies() -> None:
    plain, over = _run(), _run(over_select=1.5)
    assert all(r.num_clients == 6 for r in over.rounds)  # ceil(4 × 1.5)
    for r in over.rounds:
        late = [c for c in over.clients if c.round == r.round and c.late]
        assert r.late_clients == len(late) and r.replies >= 4 and r.replies + len(late) == 6
        assert r.wasted_bytes_up == pytest.approx(sum(c.bytes_up for c in late))
    assert sum(r.late_clients for r in over.rounds) > 0
    # the slow mobile clients are the late ones: the rounds are no longer held by them
    assert all(c.profile == "mobile-4g" for c in over.clients if c.late)
    assert sum(r.round_time_s for r in over.rounds) < sum(r.round_time_s for r in plain.rounds)


def test_a_deadline_cuts_the_slow_uploads_that_the_superlink_does_not_know_yet() -> None:
    plain, timed = _run(), _run(deadline_s=20.0)
    assert sum(r.late_clients for r in timed.rounds) > 0
    assert all(c.profile == "mobile-4g" for c in timed.clients if c.late)
    assert all(t.round_time_s < p.round_time_s for t, p in zip(timed.rounds, plain.rounds))


def test_a_deadline_before_any_reply_abandons_the_round_and_records_every_client_late() -> None:
    res = _run(deadline_s=1.0, min_replies=2)
    assert all(r.late_clients == 4 and r.replies == 0 and r.abandoned for r in res.rounds)
    assert all(c.late for c in res.clients)
    # the stage ends at the ServerApp's first poll at or after the deadline (its polls are 3 s apart)
    assert all(r.stage_times_s["fit"] < 3.5 for r in res.rounds)
    assert all(r.extra["waited_for_deadline_s"] > 0 for r in res.rounds)


@pytest.mark.parametrize("keys, expected", [
    ({"clients": {"total": 20, "per_round": 4, "sampling": "poisson"}}, "needs a fixed-size cohort"),
    ({"clients": {"total": 20, "per_round": 4, "sampling": "poisson"}, "privacy": {"dp": {"enabled": True}},
      "round": {"deadline_s": 20.0}}, 'with central DP needs clients.sampling = "fixed"'),
])
def test_what_does_not_run_yet_is_a_clear_error(keys: dict, expected: str) -> None:
    data = {**_cfg(over_select=1.5), **keys}
    with pytest.raises((ConfigError, ValueError), match=re.escape(expected)):
        config_from_dict(data)


@pytest.mark.parametrize("policy", [{"over_select": 1.5}, {"deadline_s": 20.0}])
def test_under_secagg_a_late_client_is_a_dropout_that_the_unmask_stage_reconstructs(policy: dict) -> None:
    """Flower's SecAgg+ sends its unmask stage to the clients whose masked vectors the server holds: a client
    late at the training stage's close takes no part in it, and the server reconstructs its pairwise masks as
    a dropped client's (server_stage_s with it dropped); the round completes with the chance Flower's
    threshold rule gives that many lost clients."""
    from fedbw.netmodel.secagg_cost import server_stage_s
    from fedbw.privacy.secagg_dropouts import completion_probability

    data = {**_cfg(**policy), "privacy": {"secagg": {"enabled": True}}}
    plan = build_plan(config_from_dict(data))
    res = run_estimate(plan, "t")
    sa, crypto, params = plan.config.privacy.secagg, plan.costs.secagg, plan.model.params
    assert sum(r.late_clients for r in res.rounds) > 0
    for r in res.rounds:
        n, late = r.num_clients, {c.client_id for c in res.clients if c.round == r.round and c.late}
        assert len(late) == r.late_clients
        for c in res.clients:
            if c.round == r.round:
                assert ("unmask" in {s.stage for s in c.stages}) == (c.client_id not in late)
        shares = min(sa.shares(n), n)
        expected = sum(server_stage_s(stage, n, shares, params, crypto, len(late) if stage == "unmask" else 0,
                                      sa.reconstruction_threshold)
                       for stage in ("setup", "share_keys", "collect_masked_vectors", "unmask"))
        assert r.extra["framework_parts_s"]["server_extra_s"] == pytest.approx(expected, rel=1e-9)
        if late:
            assert r.extra["secagg_completes"] == pytest.approx(completion_probability(
                n, shares, sa.reconstruction_threshold, len(late), seed=plan.config.seed))
        else:
            assert "secagg_completes" not in r.extra


def test_min_replies_above_the_cohort_is_refused() -> None:
    with pytest.raises((ConfigError, ValueError), match="cannot exceed clients.per_round"):
        config_from_dict(_cfg(min_replies=5))


def _gaussian_epsilon(noise_multipliers: list[float], delta: float) -> float:
    """ε of Gaussian releases composed by Rényi DP, written out (not fedbw's accountant): RDP(α) = Σ α / (2 z²)
    per release, converted at δ as dp-accounting converts (Canonne, Kamath and Steinke 2020), at its orders."""
    import math

    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    if not noise_multipliers:
        return 0.0
    best = math.inf
    for a in DEFAULT_RDP_ORDERS:
        if a <= 1:
            continue
        rdp = sum(a / (2 * z * z) for z in noise_multipliers)
        best = min(best, rdp - (math.log(delta) + math.log(a)) / (a - 1) + math.log((a - 1) / a))
    return max(best, 0.0)


@pytest.mark.parametrize("policy", [{"deadline_s": 20.0}, {"over_select": 1.5}])
def test_dp_accounts_each_round_for_the_replies_that_came_in_time_without_amplification(policy: dict) -> None:
    """ε of the cohort actually aggregated (issue 32.2). The first replies are not a uniform sample (the fast
    links reply first), so each round is its Gaussian release: Flower's noise z·C / clients.per_round over the
    replace-one sensitivity 2C / n of the mean of the n replies that came in time."""
    data = _cfg(**policy)
    data["privacy"] = {"dp": {"enabled": True, "noise_multiplier": 1.0}}
    res = run_estimate(build_plan(config_from_dict(data)), "t")
    assert sum(r.late_clients for r in res.rounds) > 0
    assert [r.privacy.cohort for r in res.rounds] == [r.replies for r in res.rounds]
    assert all(r.privacy.sampling == "first-replies" and r.privacy.adjacency == "replace-one" for r in res.rounds)
    zs = []
    for r in res.rounds:
        zs.append(1.0 * r.replies / (2 * 4))
        assert r.epsilon == pytest.approx(_gaussian_epsilon(zs, 1e-5), rel=1e-6)
    assert [r.privacy.noise_multiplier for r in res.rounds] == pytest.approx(zs)


def test_the_privacy_budget_of_a_round_that_closes_early_assumes_its_fewest_replies() -> None:
    """How many replies come in time is known only after a round, so privacy.dp.max_epsilon stops the run by
    the fewest a round can aggregate and still release (round.min_replies); the ε a run reaches stays within
    it, and a higher min_replies lets more rounds fit."""
    def plan_for(min_replies: int, max_epsilon: float | None):
        data = {**_cfg(deadline_s=20.0, min_replies=min_replies), "training": {"rounds": 6}}
        data["privacy"] = {"dp": {"enabled": True, "noise_multiplier": 2.0, "max_epsilon": max_epsilon}}
        return build_plan(config_from_dict(data))

    cap = _gaussian_epsilon([2.0 * 3 / 8] * 3, 1e-5)  # three rounds of 3 replies fit; a fourth does not
    fewer, surer = plan_for(2, cap), plan_for(3, cap)
    assert fewer.rounds == 1 and surer.rounds == 3 and "stopped after round 3" in surer.stop_reason
    res = run_estimate(surer, "t")
    assert all(r.epsilon <= cap * (1 + 1e-9) for r in res.rounds)
    with pytest.raises(ConfigError, match="below the ε of a single round .*round.min_replies: raising it"):
        plan_for(1, cap)
