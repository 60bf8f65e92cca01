"""Which clients take part in a round: the sampling the privacy accountant must account for.

Amplification by subsampling holds only for the sampling that actually happens (and only while the
sample stays secret), so the plan draws every round's cohort here, from ``clients.sampling``, and the
accountant (:mod:`fedbw.privacy.accounting`) reads the same key:

* ``"fixed"`` — exactly ``per_round`` clients, uniformly without replacement (what Flower's own
  ``FedAvg`` sampling does). Accounted as dp-accounting's ``SampledWithoutReplacementDpEvent`` under
  replace-one adjacency.
* ``"poisson"`` — each client independently with probability q = per_round / total; a round's cohort
  has any size 0..total (mean per_round). Accounted as ``PoissonSampledDpEvent`` under add/remove.

With ``privacy.randomness = "seed"`` the draw is a function of the seed and the round (reproducible,
and therefore not secret); with ``"os"`` it comes from the OS's CSPRNG (:mod:`fedbw.privacy.randomness`).
"""

from __future__ import annotations

from fedbw.config import ExperimentConfig
from fedbw.privacy.randomness import python_rng


def sampling_rate(cfg: ExperimentConfig) -> float:
    """q = per_round / total: the Poisson probability, and the fraction a fixed-size sample draws."""
    return cfg.clients.per_round / cfg.clients.total


def sample_round(cfg: ExperimentConfig, round_index: int) -> list[int]:
    """The clients of round ``round_index`` (1-based), sorted; a Poisson round may be empty."""
    c = cfg.clients
    randomness = cfg.privacy.randomness
    if c.sampling == "poisson":
        rng = python_rng(randomness, cfg.seed, "poisson", round_index)
        q = sampling_rate(cfg)
        return [cid for cid in range(c.total) if rng.random() < q]
    rng = python_rng(randomness, cfg.seed, "sample", round_index)
    return sorted(rng.sample(range(c.total), c.per_round))
