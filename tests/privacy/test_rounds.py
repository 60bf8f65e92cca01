"""How one round is accounted (fedbw.privacy.rounds): the rule the server and estimate share."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from dp_accounting import dp_event

from fedbw.privacy.accounting import CentralDp, PrivacyAccountant
from fedbw.privacy.rounds import account_round, released_cohort
from fedbw.privacy.sampling import FirstRepliesSampler, make_sampler


def _plan(mode: str, closes_early: bool, sampled: dict[int, list[int]], min_replies: int = 1) -> SimpleNamespace:
    sampler = make_sampler("fixed", 10, 3, first_replies=(2, min_replies) if closes_early else None)
    config = SimpleNamespace(privacy=SimpleNamespace(dp=SimpleNamespace(mode=mode)),
                             round=SimpleNamespace(closes_early=closes_early, min_replies=min_replies))
    return SimpleNamespace(config=config, sampler=sampler, sampled_clients=lambda r: sampled[r], dropped=lambda r: [])


def test_local_dp_counts_a_late_clients_update_as_released() -> None:
    """Client 1 is late in both rounds: its update reached the server twice, unused, and local DP released it
    each time, so ε is that of two releases, not of the one release of any client that came in time."""
    sampled, counted = {1: [0, 1], 2: [1, 2]}, {1: [0], 2: [2]}
    for closes_early, releases in ((True, 2), (False, 1)):
        plan = _plan("local", closes_early, sampled)
        acc = PrivacyAccountant(mode="local", delta=1e-5, local_epsilon=1.0, local_delta=1e-6)
        eps = [account_round(acc, plan, r, counted[r]) for r in (1, 2)]
        assert eps[-1] == pytest.approx(acc.epsilon_after(releases))


def test_central_dp_accounts_the_replies_aggregated_and_nothing_for_an_abandoned_round() -> None:
    plan = _plan("central-server-fixed", True, {1: [0, 1, 2], 2: [0, 1, 2]}, min_replies=2)
    assert released_cohort(plan, [0, 1]) == 2 and released_cohort(plan, [0]) == 0  # below min_replies: abandoned
    acc = PrivacyAccountant(mode="central", delta=1e-5, central=CentralDp(plan.sampler, 1.0))
    assert account_round(acc, plan, 1, [0]) == 0.0  # nothing released
    one = account_round(acc, plan, 2, [0, 1])
    alone = PrivacyAccountant(mode="central", delta=1e-5, central=CentralDp(plan.sampler, 1.0))
    assert one == pytest.approx(alone.step(cohort=2)) and one > 0


def test_the_first_replies_sampler_claims_no_amplification_and_budgets_at_the_fewest_replies() -> None:
    s = make_sampler("fixed", 100, 13, first_replies=(10, 4))
    assert type(s) is FirstRepliesSampler and s.kind == "first-replies" and s.adjacency == "replace-one"
    gaussian = dp_event.GaussianDpEvent(0.5)
    assert s.dp_event(gaussian, 7) == gaussian and isinstance(s.dp_event(gaussian, 0), dp_event.NoOpDpEvent)
    # Flower divides its noise by clients.per_round (10), not by the 13 sampled; the budget assumes 4 replies
    assert s.noise_multiplier(1.0, 10) == pytest.approx(0.5) and s.noise_multiplier(1.0) == pytest.approx(0.2)
    assert s.budget_cohort(13) == 4 and s.budget_cohort(3) == 3 and s.as_planned(4)
    assert type(make_sampler("fixed", 100, 13, on_line_only=True, first_replies=(10, 4))) is FirstRepliesSampler
    assert type(make_sampler("poisson", 100, 10, first_replies=(10, 1))).kind == "poisson"
