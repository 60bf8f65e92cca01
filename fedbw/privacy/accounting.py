"""ε accounting for every DP mode fedbw runs, on Google's dp-accounting (RDP).

Flower's DP wrappers add calibrated noise but say nothing about the privacy they spend; this module
turns a DP config into ε per round, and tells the server *before* a round whether running it would
push ε past ``max_epsilon`` — so a run stops cleanly at the last round that fits the budget.

One accountant (dp-accounting's ``RdpAccountant`` with its default orders, the same orders Opacus
uses) serves every mode, so ε from different modes are comparable:

* **central** (server- or client-side clipping, fixed or adaptive): each round is one
  Poisson-subsampled Gaussian mechanism with sampling rate q = clients.per_round / clients.total and
  noise multiplier z (noise std / clipping norm on the sum of clipped updates, which is how Flower's
  wrappers calibrate it; for adaptive clipping z is the *effective* multiplier after Flower splits
  noise between the update and the clipped-count query, Andrew et al. 2021). Unit of privacy: one
  client's whole dataset (user-level, add/remove one client).
* **local** (``LocalDpMod``): every participation releases the client's update through the Gaussian
  mechanism calibrated for (ε₀, δ₀) per release. No amplification by sampling (the server knows who
  took part). Composition choices (``privacy.dp.local_accounting``):
  ``rdp`` — compose the actual Gaussian mechanism (z = √(2 ln(1.25/δ₀)) / ε₀) with RDP; tightest,
  valid for any ε₀; ``basic`` — k releases are (k·ε₀, k·δ₀)-DP; ``advanced`` — the better of basic and
  Dwork–Rothblum–Vadhan advanced composition with slack δ' = δ − k·δ₀. ``basic``/``advanced`` rest on
  the per-release (ε₀, δ₀) promise itself, which the classic Gaussian calibration keeps only for
  ε₀ < 1; the config rejects them above that.

Every ε is reported at ``privacy.dp.target_delta``; an ε of ``inf`` means no finite guarantee holds
at that δ (e.g. basic composition once k·δ₀ > δ).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant

from fedbw.config import ExperimentConfig
from fedbw.errors import ConfigError

LocalComposition = Literal["rdp", "basic", "advanced"]

#: Gaussian calibration of LocalDpMod (Dwork & Roth, Thm A.1): σ = Δ·√(2 ln(1.25/δ₀)) / ε₀.
def local_noise_multiplier(epsilon: float, delta: float) -> float:
    """Noise std / sensitivity that ``LocalDpMod`` adds for a per-release (ε, δ)."""
    return math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def rdp_gaussian_epsilon(noise_multiplier: float, steps: int, delta: float, sample_rate: float = 1.0) -> float:
    """ε after ``steps`` compositions of a (Poisson-subsampled) Gaussian mechanism, by RDP.

    With sample_rate = 0.04, noise_multiplier = 1.5, steps = 2250, delta = 1e-5 this gives
    ε ≈ 7.329, the reference vector of Opacus's RDP accountant tests.
    """
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if steps == 0:
        return 0.0
    if noise_multiplier <= 0:
        return math.inf
    orders, rdp = _rdp_one_step(float(noise_multiplier), float(sample_rate))
    return float(rdp_privacy_accountant.compute_epsilon(orders, steps * rdp, delta)[0])


@lru_cache(maxsize=64)
def _rdp_one_step(noise_multiplier: float, sample_rate: float) -> tuple[np.ndarray, np.ndarray]:
    """RDP of one step at dp-accounting's default orders (Opacus's), computed once per mechanism.

    RDP composes additively, so k steps are k × this vector — exactly what ``RdpAccountant.compose(event,
    k)`` computes, without redoing the costly per-order series (≈ 0.4 s) for every round of a schedule.
    """
    event: dp_event.DpEvent = dp_event.GaussianDpEvent(noise_multiplier)
    if sample_rate < 1.0:
        event = dp_event.PoissonSampledDpEvent(sample_rate, event)
    accountant = rdp_privacy_accountant.RdpAccountant()  # default orders = Opacus's default orders
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    absl_logger.setLevel(logging.ERROR)  # fractional orders that do not converge are dropped, by design; quiet
    try:
        accountant.compose(event, 1)
    finally:
        absl_logger.setLevel(level)
    # dp-accounting exposes no getter for the RDP vector; _orders/_rdp are its (stable since 0.4) fields.
    return accountant._orders.copy(), accountant._rdp.copy()


def basic_composition_epsilon(epsilon0: float, delta0: float, k: int, delta: float) -> float:
    """k-fold basic composition: (k·ε₀, k·δ₀)-DP; ``inf`` when k·δ₀ exceeds the target δ."""
    if k == 0:
        return 0.0
    return k * epsilon0 if k * delta0 <= delta else math.inf


def advanced_composition_epsilon(epsilon0: float, delta0: float, k: int, delta: float) -> float:
    """Best of basic and advanced composition (Dwork, Rothblum & Vadhan 2010) at total δ.

    Advanced: (√(2k ln(1/δ'))·ε₀ + k·ε₀(e^ε₀ − 1), k·δ₀ + δ')-DP; δ' = δ − k·δ₀ spends all slack left.
    """
    if k == 0:
        return 0.0
    slack = delta - k * delta0
    if slack <= 0:
        return math.inf
    adv = math.sqrt(2 * k * math.log(1 / slack)) * epsilon0 + k * epsilon0 * math.expm1(epsilon0)
    return min(adv, k * epsilon0)


@dataclass(frozen=True)
class PrivacySpent:
    """Where the budget stands after ``rounds`` rounds."""

    rounds: int
    epsilon: float
    delta: float


class PrivacyAccountant:
    """Incremental ε for one run. The server calls, per round::

        if accountant.next_round_exceeds():   # before sampling/sending anything
            stop the run cleanly (the budget allows no further round)
        ... run the round ...
        eps = accountant.step(participants)   # ε so far, for the RoundRecord

    ``participants`` only matters in local mode (ε is tracked for the client that has released most
    often); central mode counts rounds, since subsampling amplification must not condition on who
    was actually sampled.
    """

    def __init__(self, *, mode: Literal["central", "local"], delta: float, max_epsilon: float | None = None,
                 noise_multiplier: float = 0.0, sample_rate: float = 1.0, local_epsilon: float = 0.0,
                 local_delta: float = 0.0, local_composition: LocalComposition = "rdp") -> None:
        if not 0 < delta < 1:
            raise ConfigError(f"privacy.dp.target_delta must be in (0, 1), got {delta}")
        if mode == "central":
            if noise_multiplier <= 0:
                raise ConfigError("privacy.dp.noise_multiplier must be > 0 for central DP (0 adds no noise and "
                                  "gives no finite ε); raise it or disable privacy.dp")
            if not 0 < sample_rate <= 1:
                raise ConfigError(f"sampling rate clients.per_round/clients.total must be in (0, 1], got {sample_rate}")
        elif mode == "local":
            if local_epsilon <= 0 or not 0 < local_delta < 1:
                raise ConfigError("privacy.dp.local_epsilon must be > 0 and local_delta in (0, 1) for local DP")
            if local_composition not in ("rdp", "basic", "advanced"):
                raise ConfigError(f"privacy.dp.local_accounting {local_composition!r}: use rdp, basic or advanced")
        else:
            raise ValueError(f"unknown DP accounting mode {mode!r}")
        self.mode = mode
        self.delta = delta
        self.max_epsilon = max_epsilon
        self.noise_multiplier = noise_multiplier
        self.sample_rate = sample_rate
        self.local_epsilon = local_epsilon
        self.local_delta = local_delta
        self.local_composition = local_composition
        self.rounds = 0
        self._releases: Counter[int] = Counter()
        self._worst_releases = 0
        self._cache: dict[int, float] = {}

    # ------------------------------------------------------------------ ε as a function of count

    def epsilon_after(self, count: int) -> float:
        """ε after ``count`` rounds (central) or ``count`` releases by one client (local)."""
        if count not in self._cache:
            self._cache[count] = self._epsilon(count)
        return self._cache[count]

    def _epsilon(self, count: int) -> float:
        if self.mode == "central":
            return rdp_gaussian_epsilon(self.noise_multiplier, count, self.delta, self.sample_rate)
        if self.local_composition == "rdp":
            return rdp_gaussian_epsilon(local_noise_multiplier(self.local_epsilon, self.local_delta), count, self.delta)
        if self.local_composition == "basic":
            return basic_composition_epsilon(self.local_epsilon, self.local_delta, count, self.delta)
        return advanced_composition_epsilon(self.local_epsilon, self.local_delta, count, self.delta)

    # ------------------------------------------------------------------ the per-round API

    @property
    def _count(self) -> int:
        return self.rounds if self.mode == "central" else self._worst_releases

    @property
    def epsilon(self) -> float:
        """ε spent so far."""
        return self.epsilon_after(self._count)

    def spent(self) -> PrivacySpent:
        return PrivacySpent(self.rounds, self.epsilon, self.delta)

    def next_round_epsilon(self) -> float:
        """ε after one more round (worst case in local mode: the most-released client takes part again)."""
        return self.epsilon_after(self._count + 1)

    def next_round_exceeds(self) -> bool:
        """True when running one more round would push ε above ``max_epsilon``."""
        return self.max_epsilon is not None and self.next_round_epsilon() > self.max_epsilon

    def step(self, participants: Iterable[int] | None = None) -> float:
        """Record one finished round and return ε so far.

        Local mode: ``participants`` are the client ids whose updates were released this round;
        ``None`` means "assume the worst": some client released in every round.
        """
        self.rounds += 1
        if self.mode == "local":
            if participants is None:
                self._worst_releases += 1
            else:
                self._releases.update(set(participants))
                self._worst_releases = max(self._releases.values(), default=0)
        return self.epsilon

    def max_rounds(self, limit: int = 100_000) -> int | None:
        """How many rounds fit the budget in the worst case (None if no budget is set)."""
        if self.max_epsilon is None:
            return None
        lo, hi = 0, 1
        while hi <= limit and self.epsilon_after(hi) <= self.max_epsilon:
            lo, hi = hi, hi * 2
        hi = min(hi, limit + 1)
        while hi - lo > 1:  # ε is non-decreasing in the count: bisect the last count that fits
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self.epsilon_after(mid) <= self.max_epsilon else (lo, mid)
        return lo


def accountant_from_config(cfg: ExperimentConfig) -> PrivacyAccountant | None:
    """The accountant for a run, or None when DP is off; ConfigError if not even one round fits the budget."""
    dp = cfg.privacy.dp
    if not dp.enabled:
        return None
    if dp.mode == "local":
        acc = PrivacyAccountant(mode="local", delta=dp.target_delta, max_epsilon=dp.max_epsilon,
                                local_epsilon=dp.local_epsilon, local_delta=dp.local_delta,
                                local_composition=dp.local_accounting)
    else:
        acc = PrivacyAccountant(mode="central", delta=dp.target_delta, max_epsilon=dp.max_epsilon,
                                noise_multiplier=dp.noise_multiplier,
                                sample_rate=cfg.clients.per_round / cfg.clients.total)
    if acc.next_round_exceeds():
        raise ConfigError(f"privacy.dp.max_epsilon ({dp.max_epsilon}) is below the ε of a single round "
                          f"({acc.next_round_epsilon():.4g}); raise max_epsilon, or add noise "
                          f"(noise_multiplier / local_epsilon)")
    return acc


def epsilon_schedule(cfg: ExperimentConfig, rounds: int | None = None,
                     sampled: Callable[[int], Iterable[int]] | None = None) -> list[float]:
    """ε after each round 1..rounds; [] if DP is off.

    Central-DP ε depends only on the round count. Local-DP ε depends on who took part: pass
    ``sampled(r)`` (the plan's ``sampled_clients``, which is deterministic in the seed) to get the ε the
    server will report; without it, the worst case (one client in every round). Either way this is known
    before a run: the estimate engine fills RoundRecord.epsilon from it and the server caps its rounds.
    """
    acc = accountant_from_config(cfg)
    if acc is None:
        return []
    return [acc.step(None if sampled is None else list(sampled(r)))
            for r in range(1, (rounds or cfg.training.rounds) + 1)]


@dataclass(frozen=True)
class BudgetStop:
    """The privacy budget ends a run before ``training.rounds``."""

    rounds: int  #: rounds that fit the budget (≥ 1: a config where none fits is rejected)
    max_epsilon: float
    next_epsilon: float  #: ε the next round would have reached

    @property
    def message(self) -> str:
        return (f"stopped after round {self.rounds}: the next round would exceed max_epsilon = {self.max_epsilon:g} "
                f"(ε would be {self.next_epsilon:.4g})")


@dataclass(frozen=True)
class Budget:
    """What the privacy budget decides before a run: rounds to run, ε after each, why it stops early."""

    rounds: int  #: rounds that run (≤ training.rounds)
    epsilons: list[float] | None  #: ε after each round that runs; None when DP is off
    stop_reason: str | None  #: set when max_epsilon, not training.rounds, ends the run


def plan_budget(cfg: ExperimentConfig, sampled: Callable[[int], Iterable[int]] | None = None) -> Budget:
    """The run's budget from its config and its sampling (``sampled`` as in :func:`epsilon_schedule`).

    The run stops *before* the first round whose ε would exceed ``privacy.dp.max_epsilon``; ConfigError
    when not even one round fits.
    """
    schedule = epsilon_schedule(cfg, sampled=sampled)
    if not schedule:
        return Budget(cfg.training.rounds, None, None)
    cap = cfg.privacy.dp.max_epsilon
    for i, eps in enumerate(schedule):
        if cap is not None and eps > cap:
            return Budget(i, schedule[:i], BudgetStop(rounds=i, max_epsilon=cap, next_epsilon=eps).message)
    return Budget(cfg.training.rounds, schedule, None)
