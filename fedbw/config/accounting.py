"""A config's privacy budget: its accountant, its ε after each round and the rounds that fit, for the
callers that hold a config rather than a plan (config checks, studies, tests).

:mod:`fedbw.privacy.accounting` works on a DP setup and a sampler and imports no config; these read both
from a config (``privacy.dp`` and :meth:`ExperimentConfig.sampler`), once, so that every caller accounts
for the sampling the plan draws with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from fedbw.config.experiment import ExperimentConfig
from fedbw.privacy.accounting import Budget, PrivacyAccountant, accountant_for, epsilon_schedule, plan_budget


def config_accountant(cfg: ExperimentConfig) -> PrivacyAccountant | None:
    """The accountant a run of ``cfg`` keeps (None: DP off); ConfigError if not one round fits the budget."""
    return accountant_for(cfg.privacy.dp, cfg.sampler())


def config_epsilons(cfg: ExperimentConfig, sampled: Callable[[int], Iterable[int]] | None = None,
                    rounds: int | None = None) -> list[float]:
    """ε after each of ``cfg``'s rounds as planned (:func:`fedbw.privacy.accounting.epsilon_schedule`)."""
    return epsilon_schedule(cfg.privacy.dp, cfg.sampler(), rounds or cfg.training.rounds, sampled)


def config_budget(cfg: ExperimentConfig, sampled: Callable[[int], Iterable[int]] | None = None) -> Budget:
    """The rounds of ``cfg`` that fit its budget and ε after each (:func:`fedbw.privacy.accounting.plan_budget`)."""
    return plan_budget(cfg.privacy.dp, cfg.sampler(), cfg.training.rounds, sampled)
