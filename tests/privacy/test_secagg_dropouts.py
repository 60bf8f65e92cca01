"""The chance a SecAgg+ round survives its dropouts, by Flower 1.42's rule (every node keeps `threshold`
active share holders among the `num_shares` around it on a shuffled ring)."""

from __future__ import annotations

import pytest

from fedbw.privacy.secagg_dropouts import completion_probability, completion_probability_exact


def test_hand_counted_rings() -> None:
    # 3 shares, threshold 2: a dropped node needs both neighbours, a live node one. One drop in a ring of 4
    # survives; two never do in a ring of 4 or 5 (adjacent, or a live node between them); in a ring of 6
    # only when opposite (3 of the 15 pairs)
    assert completion_probability_exact(4, 3, 2, 1) == 1.0
    assert completion_probability_exact(4, 3, 2, 2) == 0.0
    assert completion_probability_exact(5, 3, 2, 2) == 0.0
    assert completion_probability_exact(6, 3, 2, 2) == pytest.approx(0.2)
    assert completion_probability_exact(5, 3, 3, 1) == 0.0  # threshold 3 of 3: a dropped node's own share is lost
    assert completion_probability_exact(6, 3, 2, 0) == 1.0


def test_the_sampled_chance_matches_the_count_over_every_placement() -> None:
    for n, shares, t, d in ((10, 3, 2, 2), (12, 5, 2, 4), (9, 4, 2, 3)):  # 4 shares: Flower makes them 5
        exact = completion_probability_exact(n, shares, t, d)
        assert completion_probability(n, shares, t, d, draws=20_000, seed=1) == pytest.approx(exact, abs=0.015)


def test_three_shares_rarely_survive_a_tenth_of_a_big_cohort_and_log2_shares_do() -> None:
    assert completion_probability(100, 3, 2, 10) < 0.3
    assert completion_probability(100, 7, 2, 10) > 0.99
    assert completion_probability(100, 7, 2, 10, seed=3) == completion_probability(100, 7, 2, 10, seed=3)


def test_bad_arguments_are_refused() -> None:
    for args in ((0, 3, 2, 0), (5, 3, 2, 6), (5, 0, 2, 1), (5, 3, 2, -1)):
        with pytest.raises(ValueError):
            completion_probability(*args)
