"""The sampler is the mechanism the accountant assumes: fixed-size without replacement, or Poisson."""

from __future__ import annotations

import random

import pytest

from fedbw.config import config_from_dict
from fedbw.plan import build_plan
from fedbw.privacy.sampling import FixedSizeSampler, PoissonSampler, make_sampler


def sample_round(cfg, r):
    return cfg.sampler().draw(r)


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


def test_the_sampler_is_what_the_accountant_and_the_rules_for_variable_cohorts_read() -> None:
    fixed, poisson = make_sampler("fixed", 100, 10), make_sampler("poisson", 100, 10)
    assert isinstance(fixed, FixedSizeSampler) and isinstance(poisson, PoissonSampler)
    assert (fixed.kind, fixed.adjacency, fixed.cohort_varies) == ("fixed", "replace-one", False)
    assert (poisson.kind, poisson.adjacency, poisson.cohort_varies) == ("poisson", "add/remove", True)
    assert fixed.rate == poisson.rate == 0.1
    # the release's noise against its sensitivity: a fixed-size mean's grows as its cohort shrinks
    assert fixed.noise_multiplier(1.0) == 0.5 and fixed.noise_multiplier(1.0, cohort=5) == 0.25
    assert poisson.noise_multiplier(1.0, cohort=5) == 1.0  # a fixed denominator
    assert fixed.as_planned(10) and not fixed.as_planned(9) and poisson.as_planned(3)
    with pytest.raises(ValueError, match="known: fixed, poisson"):
        make_sampler("stratified", 100, 10)


def test_privacy_reads_no_sampling_name_and_no_config() -> None:
    """The sampler is the one place the name is read: privacy/ imports no config, and no module compares
    ``clients.sampling`` with a name."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "fedbw"
    for path in (root / "privacy").glob("*.py"):
        assert "fedbw.config" not in path.read_text(), path
    pattern = re.compile(r"sampling\s*[!=]=\s*[\"']|[\"'](poisson|fixed)[\"']\s*[!=]=")
    offenders = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py")
                 for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not offenders, offenders
