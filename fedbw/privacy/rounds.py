"""One round's privacy context (:class:`~fedbw.results.privacy_record.PrivacyRound`), from the plan or
from what the server saw.

The plan's prediction assumes every sampled client reports; the server, at each round's end, knows the
cohort it actually aggregated and what SecAgg+ clipped and wrapped, and reports those instead
(``round_end``'s ``privacy`` field). Both go through :func:`privacy_round`, so the words a record uses
for the sampling and the adjacency are the same everywhere.
"""

from __future__ import annotations

from typing import Protocol

from fedbw.config import ExperimentConfig
from fedbw.privacy.accounting import ADJACENCY, central_dp, local_noise_multiplier
from fedbw.results.privacy_record import PrivacyRound


class _Plan(Protocol):
    config: ExperimentConfig

    def sampled_clients(self, round_index: int) -> list[int]: ...


def accounting_terms(cfg: ExperimentConfig) -> tuple[str, str] | None:
    """(sampling, adjacency) the ε of this config is accounted under; None without DP."""
    dp = cfg.privacy.dp
    if not dp.enabled:
        return None
    if dp.mode == "local":
        return "none", ADJACENCY["local"]  # no amplification: the server knows who released
    return cfg.clients.sampling, ADJACENCY[cfg.clients.sampling]


def privacy_round(cfg: ExperimentConfig, cohort: int, secagg_clipped: int | None = None,
                  secagg_wrapped: int | None = None) -> PrivacyRound | None:
    """The record of a round that aggregated ``cohort`` updates; None when neither DP nor SecAgg+ is on."""
    dp, sa = cfg.privacy.dp, cfg.privacy.secagg
    if not dp.enabled and not sa.enabled:
        return None
    terms = accounting_terms(cfg)
    z = None
    if dp.enabled:
        z = (local_noise_multiplier(dp.local_epsilon, dp.local_delta) if dp.mode == "local"
             else central_dp(cfg).effective_noise_multiplier(cohort))
    return PrivacyRound(delta=dp.target_delta if dp.enabled else None, sampling=terms[0] if terms else None,
                        adjacency=terms[1] if terms else None, cohort=cohort, secagg_clipped=secagg_clipped,
                        secagg_wrapped=secagg_wrapped, noise_multiplier=z)


def planned_privacy_round(plan: _Plan, round_index: int) -> PrivacyRound | None:
    """What the plan predicts for round ``round_index``: every sampled client reports; SecAgg+'s counts are
    not predicted (None: only a run measures them)."""
    return privacy_round(plan.config, len(plan.sampled_clients(round_index)))
