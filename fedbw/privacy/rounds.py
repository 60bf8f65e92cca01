"""One round's privacy context (:class:`~fedbw.privacy.record.PrivacyRound`), from the plan or from
what the server saw.

The plan's prediction assumes every sampled client reports; the server, at each round's end, knows the
cohort it actually aggregated and what SecAgg+ clipped and wrapped, and reports those instead
(``round_end``'s ``privacy`` field). Both go through :func:`privacy_round`, so the words a record uses
for the sampling and the adjacency are the same everywhere: the sampler's own.
"""

from __future__ import annotations

from typing import Any, Protocol

from fedbw.privacy.accounting import LOCAL_ADJACENCY, DpSettings, PrivacyAccountant, local_noise_multiplier
from fedbw.privacy.record import PrivacyRound
from fedbw.privacy.sampling import Sampler


class _SecAggSettings(Protocol):
    enabled: bool


class PrivacySettings(Protocol):
    """What a round's record reads of a privacy setup (a config's ``privacy`` section has these)."""

    dp: DpSettings
    secagg: _SecAggSettings


class _Plan(Protocol):
    config: Any  #: its ``privacy`` section is a :class:`PrivacySettings`
    sampler: Sampler

    def sampled_clients(self, round_index: int) -> list[int]: ...

    def dropped(self, round_index: int) -> list[int]: ...


def accounting_terms(dp: DpSettings, sampler: Sampler) -> tuple[str, str] | None:
    """(sampling, adjacency) the ε of this setup is accounted under; None without DP."""
    if not dp.enabled:
        return None
    if dp.mode == "local":
        return "none", LOCAL_ADJACENCY  # no amplification: the server knows who released
    return sampler.kind, sampler.adjacency


def privacy_round(privacy: PrivacySettings, sampler: Sampler, cohort: int, secagg_clipped: int | None = None,
                  secagg_wrapped: int | None = None) -> PrivacyRound | None:
    """The record of a round that aggregated ``cohort`` updates; None when neither DP nor SecAgg+ is on."""
    dp, sa = privacy.dp, privacy.secagg
    if not dp.enabled and not sa.enabled:
        return None
    terms = accounting_terms(dp, sampler)
    z = None
    if dp.enabled:
        z = (local_noise_multiplier(dp.local_epsilon, dp.local_delta) if dp.mode == "local"
             else sampler.noise_multiplier(dp.noise_multiplier, cohort))
    return PrivacyRound(delta=dp.target_delta if dp.enabled else None, sampling=terms[0] if terms else None,
                        adjacency=terms[1] if terms else None, cohort=cohort, secagg_clipped=secagg_clipped,
                        secagg_wrapped=secagg_wrapped, noise_multiplier=z)


def planned_privacy_round(plan: _Plan, round_index: int) -> PrivacyRound | None:
    """What the plan predicts for round ``round_index``: every sampled client reports but the plan's dropouts
    (SecAgg+'s, and the clients that go off line mid-round); SecAgg+'s counts are not predicted (None: only a
    run measures them)."""
    return privacy_round(plan.config.privacy, plan.sampler, len(aggregated(plan, round_index)))


def aggregated(plan: _Plan, round_index: int) -> list[int]:
    """The clients whose updates the plan has the server aggregate in round ``round_index``."""
    gone = set(plan.dropped(round_index))
    return [c for c in plan.sampled_clients(round_index) if c not in gone]


def released_cohort(plan: _Plan, counted: list[int]) -> int:
    """Updates a round aggregates when ``counted`` came in time: none when they are fewer than
    ``round.min_replies`` (the round is abandoned: the server keeps its model, and Flower's DP wrapper adds no
    noise to a model it does not release)."""
    return len(counted) if len(counted) >= plan.config.round.min_replies else 0


def account_round(accountant: PrivacyAccountant, plan: _Plan, round_index: int, counted: list[int]) -> float:
    """ε after round ``round_index``, whose server received the updates of ``counted`` in time: the one rule
    by which the server (simulate, emulate) and estimate account a round.

    Central DP releases the aggregate, so its cohort is what the round aggregated of ``counted``, whatever
    closed the round (:func:`released_cohort`; a variable cohort is one release whatever its size). Local DP
    releases each update as it is sent: every client that sent one, a late client's included (its update
    reached the server, unused), so the plan's cohort less its dropouts when a round closes early.
    """
    cfg = plan.config
    if cfg.privacy.dp.mode == "local":
        released = aggregated(plan, round_index) if cfg.round.closes_early else counted
        return accountant.step(participants=released)
    if plan.sampler.cohort_varies:
        return accountant.step()  # every round of a variable cohort is one release (noise if empty)
    return accountant.step(cohort=released_cohort(plan, counted))
