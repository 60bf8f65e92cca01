"""Which clients take part in a round: the sampler, and what the privacy accountant reads from it.

Amplification by subsampling holds only for the sampling that actually happens (and only while the
sample stays secret), so one object both draws every round's cohort and tells the accountant how to
account for it — as in Opacus, where the sampler is what the accountant takes its rate from. The plan
builds it once (from ``clients.sampling``, through :func:`make_sampler`, the one place that reads the
name); the plan's cohorts, the accountant's DP event and adjacency, the config's checks and the server's
rules for variable cohorts all ask the same object, never the name:

* :class:`FixedSizeSampler` — exactly ``per_round`` clients, uniformly without replacement (what Flower's
  own ``FedAvg`` sampling does). Accounted as dp-accounting's ``SampledWithoutReplacementDpEvent`` under
  replace-one adjacency; its release's sensitivity grows as clients drop out of the cohort.
* :class:`OnLineSampler` — a fixed-size cohort drawn from the clients on line (``clients.availability``):
  not a uniform sample, so accounted without amplification (each round's Gaussian release, replace-one).
* :class:`FirstRepliesSampler` — a fixed-size cohort whose round closes early (``round.deadline_s``,
  ``round.over_select``): the server aggregates the replies that came first, which depends on the clients'
  links, so no amplification either; and a plan cannot know how many come in time, so its budget assumes
  the fewest a round can aggregate (``round.min_replies``).
* :class:`PoissonSampler` — each client independently with probability q = per_round / total; a round's
  cohort has any size 0..total (mean per_round). Accounted as ``PoissonSampledDpEvent`` under
  add/remove; the server divides by ``per_round`` whoever reports (a fixed denominator), and releases
  noise even from an empty round.

With ``randomness = "seed"`` the draw is a function of the seed and the round (reproducible, and
therefore not secret); with ``"os"`` it comes from the OS's CSPRNG (:mod:`fedbw.privacy.randomness`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant

from fedbw.privacy.randomness import Randomness, python_rng

Relation = rdp_privacy_accountant.NeighborRel


@dataclass(frozen=True)
class Sampler:
    """How a round's cohort is drawn from ``population`` clients, ``per_round`` of them (the mean)."""

    population: int
    per_round: int
    seed: int = 0
    randomness: Randomness = "seed"

    #: the name records and tables give this sampling
    kind: ClassVar[str]
    #: the neighbouring datasets its ε is stated for, as records and tables name them
    adjacency: ClassVar[str]
    relation: ClassVar[Relation]
    #: a round's cohort has a random size (0 included): SecAgg+ cannot run on it, central DP divides by
    #: ``per_round`` whoever reports and releases noise even from an empty round
    cohort_varies: ClassVar[bool]
    #: what a budget error adds about how this sampler's rounds are budgeted
    budget_hint: ClassVar[str] = ""

    @property
    def rate(self) -> float:
        """q = per_round / population: the Poisson probability, the fraction a fixed-size sample draws."""
        return self.per_round / self.population

    def draw(self, round_index: int) -> list[int]:
        """The clients of round ``round_index`` (1-based), sorted."""
        raise NotImplementedError

    def noise_multiplier(self, z: float, cohort: int | None = None) -> float:
        """Noise std / sensitivity of a round's release, Flower's noise multiplier being ``z`` and
        ``cohort`` updates aggregated (None: as planned)."""
        raise NotImplementedError

    def dp_event(self, gaussian: dp_event.GaussianDpEvent, cohort: int | None = None) -> dp_event.DpEvent:
        """The dp-accounting event of one round whose release is ``gaussian``."""
        raise NotImplementedError

    def as_planned(self, cohort: int) -> bool:
        """Whether a round that aggregated ``cohort`` updates is accounted as planned."""
        raise NotImplementedError

    def budget_cohort(self, aggregated: int) -> int:
        """The cohort a plan's budget accounts a round at whose plan has ``aggregated`` updates reach the
        server: those, unless the round's close decides how many count."""
        return aggregated


@dataclass(frozen=True)
class FixedSizeSampler(Sampler):
    kind: ClassVar[str] = "fixed"
    adjacency: ClassVar[str] = "replace-one"
    relation: ClassVar[Relation] = Relation.REPLACE_ONE
    cohort_varies: ClassVar[bool] = False

    def draw(self, round_index: int) -> list[int]:
        rng = python_rng(self.randomness, self.seed, "sample", round_index)
        return sorted(rng.sample(range(self.population), self.per_round))

    @property
    def noise_denominator(self) -> int:
        """Flower's ``num_sampled_clients``: its noise is z·C / this."""
        return self.per_round

    @property
    def planned_cohort(self) -> int:
        """The updates a round is accounted with where no cohort is given (the plan's, or its budget's)."""
        return self.per_round

    def noise_multiplier(self, z: float, cohort: int | None = None) -> float:
        # replacing one client moves the mean of n updates by up to 2C / n; Flower's noise is z·C / per_round
        n = self.planned_cohort if cohort is None else cohort
        return z * n / (2 * self.noise_denominator)

    def dp_event(self, gaussian: dp_event.GaussianDpEvent, cohort: int | None = None) -> dp_event.DpEvent:
        if cohort == 0:
            return dp_event.NoOpDpEvent()  # nothing was released
        return self._release(gaussian)

    def _release(self, gaussian: dp_event.GaussianDpEvent) -> dp_event.DpEvent:
        """The event of a round that released ``gaussian``: amplified by this uniform sample."""
        return dp_event.SampledWithoutReplacementDpEvent(self.population, self.per_round, gaussian)

    def as_planned(self, cohort: int) -> bool:
        return cohort == self.planned_cohort


@dataclass(frozen=True)
class _Unamplified(FixedSizeSampler):
    """A fixed-size cohort that is not a uniform sample of the population: each round is accounted as the
    Gaussian release it is, for whoever was in it, under replace-one adjacency (no amplification claimed)."""

    def _release(self, gaussian: dp_event.GaussianDpEvent) -> dp_event.DpEvent:
        return gaussian


@dataclass(frozen=True)
class OnLineSampler(_Unamplified):
    """``per_round`` clients drawn from those on line at the round's start (``clients.availability``).

    Who is on line decides who can be drawn, so the cohort is not a uniform sample of the population and no
    amplification by sampling is claimed: each round is accounted as the Gaussian release it is, for whoever
    was in it, under replace-one adjacency. That bounds ε for any cohort chosen independently of the clients'
    data (an availability trace is), at the price of the amplification a uniform sample would have earned.
    """

    kind: ClassVar[str] = "on-line"


@dataclass(frozen=True)
class FirstRepliesSampler(_Unamplified):
    """A fixed-size cohort (of the population, or of the clients on line) whose round closes at a deadline or
    once ``aggregates`` replies are in (``[round]``): the server aggregates the replies that came first.

    Who replies first depends on the clients' links and devices, so the aggregated cohort is not a uniform
    sample: no amplification by sampling is claimed (as :class:`OnLineSampler`). How many come in time is known
    only after the round: each round is accounted for the cohort it aggregated, and a plan's budget assumes
    the fewest a round can aggregate and still release, ``least`` (``round.min_replies``: a round with fewer
    is abandoned, and Flower's DP wrapper adds no noise to a model it does not release). Local DP does not
    read the sampler: a late client's update still reached the server, so it counts as a release.
    """

    kind: ClassVar[str] = "first-replies"
    budget_hint: ClassVar[str] = ("; a round that closes early is budgeted at the fewest replies it can aggregate, "
                                  "round.min_replies: raising it lets more rounds fit")
    #: replies that close the round, Flower's ``num_sampled_clients`` (``clients.per_round``; over-selection
    #: samples ``per_round`` > this)
    aggregates: int = 1
    least: int = 1  #: ``round.min_replies``

    @property
    def noise_denominator(self) -> int:
        return self.aggregates

    @property
    def planned_cohort(self) -> int:
        return self.least

    def budget_cohort(self, aggregated: int) -> int:
        return min(aggregated, self.least)


@dataclass(frozen=True)
class PoissonSampler(Sampler):
    kind: ClassVar[str] = "poisson"
    adjacency: ClassVar[str] = "add/remove"
    relation: ClassVar[Relation] = Relation.ADD_OR_REMOVE_ONE
    cohort_varies: ClassVar[bool] = True

    def draw(self, round_index: int) -> list[int]:
        rng = python_rng(self.randomness, self.seed, "poisson", round_index)
        q = self.rate
        return [cid for cid in range(self.population) if rng.random() < q]

    def noise_multiplier(self, z: float, cohort: int | None = None) -> float:
        return z  # a fixed denominator: the sensitivity is C / per_round whoever reports

    def dp_event(self, gaussian: dp_event.GaussianDpEvent, cohort: int | None = None) -> dp_event.DpEvent:
        return dp_event.PoissonSampledDpEvent(self.rate, gaussian)

    def as_planned(self, cohort: int) -> bool:
        return True  # every Poisson round is one release, whatever its size


#: The samplers by the name ``clients.sampling`` gives them.
SAMPLERS: dict[str, type[Sampler]] = {s.kind: s for s in (FixedSizeSampler, PoissonSampler)}


def make_sampler(kind: str, population: int, per_round: int, seed: int = 0,
                 randomness: Randomness = "seed", on_line_only: bool = False,
                 first_replies: tuple[int, int] | None = None) -> Sampler:
    """The sampler ``clients.sampling = kind`` names (ValueError naming the known ones otherwise).

    ``per_round``: the clients each round samples. ``on_line_only``: cohorts are drawn from the clients on line
    (a fixed size becomes :class:`OnLineSampler`). ``first_replies = (aggregates, least)``: each round closes
    early and aggregates up to ``aggregates`` (``clients.per_round``) of its replies, at least ``least`` (a
    fixed size becomes :class:`FirstRepliesSampler`, on line or not: neither is amplified)."""
    try:
        cls = SAMPLERS[kind]
    except KeyError:
        raise ValueError(f"unknown sampling {kind!r}; known: {', '.join(SAMPLERS)}") from None
    if cls is not FixedSizeSampler:
        return cls(population, per_round, seed, randomness)
    if first_replies is not None:
        aggregates, least = first_replies
        return FirstRepliesSampler(population, per_round, seed, randomness, aggregates=aggregates, least=least)
    if on_line_only:
        return OnLineSampler(population, per_round, seed, randomness)
    return FixedSizeSampler(population, per_round, seed, randomness)
