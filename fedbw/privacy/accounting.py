"""ε accounting for every DP mode fedbw runs, on Google's dp-accounting (RDP).

Flower's DP wrappers add calibrated noise but say nothing about the privacy they spend; this module
turns a DP config into ε per round, and tells the server *before* a round whether running it would
push ε past ``max_epsilon`` — so a run stops cleanly at the last round that fits the budget.

One accountant (dp-accounting's ``RdpAccountant`` with its default orders, the same orders Opacus
uses) serves every mode. What each ε means differs by mode, and records say which (docs/privacy.md):

* **central** (server- or client-side clipping, fixed or adaptive): each round is one sampled Gaussian
  mechanism over clients, accounted for the sampling that actually happens (``clients.sampling``):

  - ``poisson``: ``PoissonSampledDpEvent(q, Gaussian(z))``, q = per_round / total, add/remove-one-client
    adjacency. The server aggregates with a fixed denominator (Σ clipped updates / per_round, McMahan et
    al. 2018), so the sensitivity is C / per_round whoever reports and the noise multiplier is z.
  - ``fixed``: ``SampledWithoutReplacementDpEvent(total, per_round, Gaussian(z'))`` under replace-one
    adjacency (Wang, Balle & Kasiviswanathan 2019). Replacing one client moves the mean of the n updates
    that reported by up to 2C / n, and Flower's noise has std z·C / per_round, so z' = z · n / (2·per_round):
    z / 2 when everyone reports, less when clients drop out.

  z is Flower's noise multiplier (noise std / clipping norm); for adaptive clipping the *effective*
  one after Flower splits noise with the clipped-count query (Andrew et al. 2021). Unit: one client's
  whole data. Client weights are assumed equal (fedbw's federation has them; see docs).
* **local** (``LocalDpMod``): every participation releases the client's update through the Gaussian
  mechanism calibrated for (ε₀, δ₀) per release, sensitivity 2C (replace-one of the client's own data).
  No amplification by sampling (the server knows who took part). Composition choices
  (``privacy.dp.local_accounting``): ``rdp`` — compose the actual Gaussian (z = √(2 ln(1.25/δ₀)) / ε₀)
  with RDP; ``basic`` — k releases are (k·ε₀, k·δ₀)-DP; ``advanced`` — the better of basic and
  Dwork–Rothblum–Vadhan with slack δ' = δ − k·δ₀ (both rest on the per-release promise, which the classic
  Gaussian calibration keeps only for ε₀ < 1; the config rejects them above that).

Every ε is reported at ``privacy.dp.target_delta``; ``inf`` means no finite guarantee at that δ.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Protocol

import numpy as np
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant

from fedbw.errors import ConfigError
from fedbw.privacy.sampling import Sampler, make_sampler

LocalComposition = Literal["rdp", "basic", "advanced"]
Relation = rdp_privacy_accountant.NeighborRel

#: Local DP's adjacency, as records and tables name it (central DP's is its sampler's).
LOCAL_ADJACENCY = "replace-one"


class DpSettings(Protocol):
    """What the accountant reads of a DP setup (``privacy.dp`` of a config has these fields; this package
    imports no config, so it names what it needs instead)."""

    enabled: bool
    mode: str  #: "central" | "local"
    noise_multiplier: float
    target_delta: float
    max_epsilon: float | None
    local_epsilon: float
    local_delta: float
    local_accounting: str


def local_noise_multiplier(epsilon: float, delta: float) -> float:
    """Noise std / sensitivity that ``LocalDpMod`` adds for a per-release (ε, δ) (Dwork & Roth, Thm A.1)."""
    return math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


@dataclass(frozen=True)
class CentralDp:
    """One round of central DP as fedbw runs it: who is sampled and how (the sampler, which gives the
    event and the adjacency), and the noise Flower adds."""

    sampler: Sampler
    noise_multiplier: float  #: z = noise std / clipping norm (Flower's convention)

    @classmethod
    def of(cls, sampling: str, population: int, per_round: int, noise_multiplier: float) -> CentralDp:
        """The mechanism for ``sampling`` ("fixed" | "poisson") of ``per_round`` of ``population`` clients."""
        return cls(make_sampler(sampling, population, per_round), noise_multiplier)

    @property
    def population(self) -> int:
        return self.sampler.population  #: clients.total

    @property
    def sample_size(self) -> int:
        return self.sampler.per_round  #: Flower's ``num_sampled_clients``: the noise calibration

    @property
    def adjacency(self) -> str:
        return self.sampler.adjacency

    def effective_noise_multiplier(self, cohort: int | None = None) -> float:
        """Noise std / sensitivity of the round's release; ``cohort`` = updates aggregated (None: planned)."""
        return self.sampler.noise_multiplier(self.noise_multiplier, cohort)

    def event(self, cohort: int | None = None) -> dp_event.DpEvent:
        """The dp-accounting event of one round (``NoOpDpEvent`` when a fixed round aggregated nobody)."""
        return self.sampler.dp_event(dp_event.GaussianDpEvent(self.effective_noise_multiplier(cohort)), cohort)

    @property
    def relation(self) -> Relation:
        return self.sampler.relation


def event_rdp(event: dp_event.DpEvent, relation: Relation = Relation.ADD_OR_REMOVE_ONE) -> np.ndarray:
    """RDP of one event at dp-accounting's default orders (computed once per event: ≈ 0.2–0.5 s each)."""
    return _event_rdp(event, relation).copy()


@lru_cache(maxsize=256)
def _event_rdp(event: dp_event.DpEvent, relation: Relation) -> np.ndarray:
    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation)
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    absl_logger.setLevel(logging.ERROR)  # fractional orders that do not converge are dropped, by design; quiet
    try:
        accountant.compose(event, 1)
    finally:
        absl_logger.setLevel(level)
    # dp-accounting exposes no getter for the RDP vector; _rdp is its (stable since 0.4) field. RDP composes
    # additively, so k rounds are k × this vector — what ``compose(event, k)`` computes, without redoing it.
    return accountant._rdp.copy()


ORDERS = np.array(rdp_privacy_accountant.DEFAULT_RDP_ORDERS, dtype=np.float64)


def epsilon_from_rdp(rdp: np.ndarray, delta: float) -> float:
    """ε at ``delta`` of a composed RDP vector (dp-accounting's conversion)."""
    if not np.any(rdp):
        return 0.0
    return float(rdp_privacy_accountant.compute_epsilon(ORDERS, rdp, delta)[0])


def rdp_gaussian_epsilon(noise_multiplier: float, steps: int, delta: float, sample_rate: float = 1.0) -> float:
    """ε after ``steps`` compositions of a Poisson-subsampled Gaussian mechanism, by RDP.

    With sample_rate = 0.04, noise_multiplier = 1.5, steps = 2250, delta = 1e-5 this gives
    ε ≈ 7.329, the reference vector of Opacus's RDP accountant tests.
    """
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if steps == 0:
        return 0.0
    if noise_multiplier <= 0:
        return math.inf
    event: dp_event.DpEvent = dp_event.GaussianDpEvent(float(noise_multiplier))
    if sample_rate < 1.0:
        event = dp_event.PoissonSampledDpEvent(float(sample_rate), event)
    return epsilon_from_rdp(steps * _event_rdp(event, Relation.ADD_OR_REMOVE_ONE), delta)


def central_epsilon(mechanism: CentralDp, cohorts: Sequence[int | None], delta: float) -> float:
    """ε after one round per entry of ``cohorts`` (updates aggregated that round; None = as planned)."""
    rdp = sum((_event_rdp(mechanism.event(n), mechanism.relation) for n in cohorts), np.zeros_like(ORDERS))
    return epsilon_from_rdp(rdp, delta)


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
        eps = accountant.step(participants, cohort)   # ε so far, for the RoundRecord

    Central mode composes one event per round: ``cohort`` (updates aggregated; None = as planned) matters
    for fixed-size sampling, whose mean's sensitivity grows as clients drop out; amplification never
    conditions on *who* was sampled. Local mode tracks the client that has released most often.
    """

    def __init__(self, *, mode: Literal["central", "local"], delta: float, max_epsilon: float | None = None,
                 central: CentralDp | None = None, local_epsilon: float = 0.0, local_delta: float = 0.0,
                 local_composition: LocalComposition = "rdp") -> None:
        if not 0 < delta < 1:
            raise ConfigError(f"privacy.dp.target_delta must be in (0, 1), got {delta}")
        if mode == "central":
            if central is None or central.noise_multiplier <= 0:
                raise ConfigError("privacy.dp.noise_multiplier must be > 0 for central DP (0 adds no noise and "
                                  "gives no finite ε); raise it or disable privacy.dp")
            if not 0 < central.sample_size <= central.population:
                raise ConfigError(f"clients.per_round ({central.sample_size}) must be in 1..clients.total "
                                  f"({central.population})")
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
        self.central = central
        self.local_epsilon = local_epsilon
        self.local_delta = local_delta
        self.local_composition = local_composition
        self.rounds = 0
        self._cohorts: list[int | None] = []
        self._releases: Counter[int] = Counter()
        self._worst_releases = 0
        self._cache: dict[int, float] = {}

    # ------------------------------------------------------------------ ε as a function of count

    def epsilon_after(self, count: int) -> float:
        """ε after ``count`` planned rounds (central) or ``count`` releases by one client (local)."""
        if count not in self._cache:
            self._cache[count] = self._epsilon(count)
        return self._cache[count]

    def _epsilon(self, count: int) -> float:
        if self.mode == "central":
            assert self.central is not None
            return central_epsilon(self.central, [None] * count, self.delta)
        if self.local_composition == "rdp":
            return rdp_gaussian_epsilon(local_noise_multiplier(self.local_epsilon, self.local_delta), count, self.delta)
        if self.local_composition == "basic":
            return basic_composition_epsilon(self.local_epsilon, self.local_delta, count, self.delta)
        return advanced_composition_epsilon(self.local_epsilon, self.local_delta, count, self.delta)

    # ------------------------------------------------------------------ the per-round API

    @property
    def epsilon(self) -> float:
        """ε spent so far."""
        if self.mode == "central":
            assert self.central is not None
            if all(n is None for n in self._cohorts):
                return self.epsilon_after(len(self._cohorts))
            return central_epsilon(self.central, self._cohorts, self.delta)
        return self.epsilon_after(self._worst_releases)

    def spent(self) -> PrivacySpent:
        return PrivacySpent(self.rounds, self.epsilon, self.delta)

    def next_round_epsilon(self) -> float:
        """ε after one more round as planned (local: the most-released client takes part again)."""
        if self.mode == "central":
            assert self.central is not None
            if all(n is None for n in self._cohorts):
                return self.epsilon_after(len(self._cohorts) + 1)
            return central_epsilon(self.central, [*self._cohorts, None], self.delta)
        return self.epsilon_after(self._worst_releases + 1)

    def next_round_exceeds(self) -> bool:
        """True when running one more round would push ε above ``max_epsilon``."""
        return self.max_epsilon is not None and self.next_round_epsilon() > self.max_epsilon

    def step(self, participants: Iterable[int] | None = None, cohort: int | None = None) -> float:
        """Record one finished round and return ε so far.

        Central: ``cohort`` = updates the server aggregated (None: as planned). Local: ``participants``
        are the client ids whose updates were released; ``None`` means "assume the worst": some client
        released in every round.
        """
        self.rounds += 1
        if self.mode == "central":
            self._cohorts.append(None if cohort is None or self._planned(cohort) else cohort)
        elif participants is None:
            self._worst_releases += 1
        else:
            self._releases.update(set(participants))
            self._worst_releases = max(self._releases.values(), default=0)
        return self.epsilon

    def _planned(self, cohort: int) -> bool:
        assert self.central is not None
        return self.central.sampler.as_planned(cohort)

    def round_noise_multiplier(self, cohort: int | None = None) -> float | None:
        """The noise multiplier a round is accounted with (central; local: LocalDpMod's per release)."""
        if self.mode == "central":
            assert self.central is not None
            return self.central.effective_noise_multiplier(cohort)
        return local_noise_multiplier(self.local_epsilon, self.local_delta)

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


def accountant_for(dp: DpSettings, sampler: Sampler) -> PrivacyAccountant | None:
    """The accountant of a DP setup and the sampler its rounds draw with, or None when DP is off;
    ConfigError if not even one round fits the budget."""
    if not dp.enabled:
        return None
    if dp.mode == "local":
        acc = PrivacyAccountant(mode="local", delta=dp.target_delta, max_epsilon=dp.max_epsilon,
                                local_epsilon=dp.local_epsilon, local_delta=dp.local_delta,
                                local_composition=dp.local_accounting)  # type: ignore[arg-type]
    else:
        acc = PrivacyAccountant(mode="central", delta=dp.target_delta, max_epsilon=dp.max_epsilon,
                                central=CentralDp(sampler, dp.noise_multiplier))
    if acc.next_round_exceeds():
        raise ConfigError(f"privacy.dp.max_epsilon ({dp.max_epsilon}) is below the ε of a single round "
                          f"({acc.next_round_epsilon():.4g}); raise max_epsilon, or add noise "
                          f"(noise_multiplier / local_epsilon){'' if dp.mode == 'local' else sampler.budget_hint}")
    return acc


def epsilon_schedule(dp: DpSettings, sampler: Sampler, rounds: int,
                     sampled: Callable[[int], Iterable[int]] | None = None) -> list[float]:
    """ε after each round 1..rounds as planned; [] if DP is off.

    Central-DP ε depends on the round count and on how many updates each round aggregates (a round that
    closes early: the fewest it can aggregate, :meth:`~fedbw.privacy.sampling.Sampler.budget_cohort`). Local-DP ε
    depends on who took part. Pass ``sampled(r)``, the clients whose updates round r aggregates (the plan's,
    deterministic in the seed), to get the ε the server will report; without it, every sampled client
    reports (central) or one client releases in every round (local, the worst case). Either way this is
    known before a run: the estimate engine fills RoundRecord.epsilon from it and the server caps its rounds.
    """
    acc = accountant_for(dp, sampler)
    if acc is None:
        return []
    out = []
    for r in range(1, rounds + 1):
        who = None if sampled is None else list(sampled(r))
        out.append(acc.step(who, cohort=None if who is None else sampler.budget_cohort(len(who))))
    return out


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


def plan_budget(dp: DpSettings, sampler: Sampler, rounds: int,
                sampled: Callable[[int], Iterable[int]] | None = None) -> Budget:
    """The run's budget from its DP setup, its sampler and its ``rounds`` (``sampled`` as in
    :func:`epsilon_schedule`).

    The run stops *before* the first round whose ε would exceed ``privacy.dp.max_epsilon``; ConfigError
    when not even one round fits.
    """
    schedule = epsilon_schedule(dp, sampler, rounds, sampled)
    if not schedule:
        return Budget(rounds, None, None)
    cap = dp.max_epsilon
    for i, eps in enumerate(schedule):
        if cap is not None and eps > cap:
            return Budget(i, schedule[:i], BudgetStop(rounds=i, max_epsilon=cap, next_epsilon=eps).message)
    return Budget(rounds, schedule, None)
