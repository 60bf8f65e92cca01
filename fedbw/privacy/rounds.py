"""One round's privacy context (:class:`~fedbw.privacy.record.PrivacyRound`), from the plan or from
what the server saw.

The plan's prediction assumes every sampled client reports; the server, at each round's end, knows the
cohort it actually aggregated and what SecAgg+ clipped and wrapped, and reports those instead
(``round_end``'s ``privacy`` field). Both go through :func:`privacy_round`, so the words a record uses
for the sampling and the adjacency are the same everywhere: the sampler's own.
"""

from __future__ import annotations

from typing import Any, Protocol

from fedbw.privacy.accounting import LOCAL_ADJACENCY, DpSettings, local_noise_multiplier
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
