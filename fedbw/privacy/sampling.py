"""Which clients take part in a round: the sampling the privacy accountant must account for.

Amplification by subsampling holds only for the sampling that actually happens, so the plan draws every
round's cohort here and the accountant reads ``clients.sampling`` from the same config.
"""

from __future__ import annotations

import random

from fedbw.config import ExperimentConfig


def sample_round(cfg: ExperimentConfig, round_index: int) -> list[int]:
    """The clients of one round: a draw without replacement seeded by the config's seed and the round."""
    rng = random.Random(f"{cfg.seed}:sample:{round_index}")
    return sorted(rng.sample(range(cfg.clients.total), cfg.clients.per_round))
