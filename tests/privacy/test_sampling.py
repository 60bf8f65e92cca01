"""The sampler is the mechanism the accountant assumes: fixed-size without replacement, or Poisson."""

from __future__ import annotations

import random

import pytest

from fedbw.config import config_from_dict
from fedbw.plan import build_plan
from fedbw.privacy.sampling import sample_round


def _cfg(**clients):
    return config_from_dict({"engine": "estimate", "seed": 11, "clients": clients})


def test_fixed_is_the_seeded_draw_without_replacement_it_always_was():
    cfg = _cfg(total=20, per_round=7)
    for r in (1, 2, 9):
        expected = sorted(random.Random(f"11:sample:{r}").sample(range(20), 7))
        assert sample_round(cfg, r) == expected


def test_poisson_draws_each_client_independently_with_probability_q():
    cfg = _cfg(total=20, per_round=5, sampling="poisson")
    rounds = [sample_round(cfg, r) for r in range(1, 2001)]
    sizes = [len(s) for s in rounds]
    assert len(set(sizes)) > 5 and min(sizes) < 5 < max(sizes)  # the cohort's size varies
    counts = [sum(c in s for s in rounds) for c in range(20)]
    # Binomial(2000, 0.25) per client: mean 500, sd ≈ 19.4; ±4 sd over 20 clients
    assert all(abs(k - 500) < 78 for k in counts)
    assert sum(sizes) / len(sizes) == pytest.approx(5, abs=0.1)
    assert rounds == [sample_round(cfg, r) for r in range(1, 2001)]  # a function of the seed and round


def test_a_poisson_round_can_be_empty_and_the_plan_keeps_it():
    cfg = _cfg(total=10, per_round=1, sampling="poisson")
    plan = build_plan(config_from_dict({"engine": "estimate", "seed": 11, "clients": {"total": 10, "per_round": 1,
                                                                                      "sampling": "poisson"},
                                        "training": {"rounds": 12}}))
    assert any(not s for s in plan.samples) and plan.samples == [sample_round(cfg, r) for r in range(1, 13)]


def test_os_randomness_is_not_the_seeds():
    seeded = config_from_dict({"engine": "estimate", "clients": {"total": 60, "per_round": 20}})
    os_cfg = config_from_dict({"engine": "estimate", "clients": {"total": 60, "per_round": 20},
                               "privacy": {"randomness": "os"}})
    assert sample_round(seeded, 1) == sample_round(seeded, 1)
    draws = {tuple(sample_round(os_cfg, 1)) for _ in range(3)}
    assert len(draws) == 3  # C(60, 20) ≈ 4e15 samples: a repeat would mean the seed came back
