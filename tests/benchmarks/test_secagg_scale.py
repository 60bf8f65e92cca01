"""benchmarks/secagg_scale.py's design, without running it: the shares it tries are valid for Flower's ring."""

from __future__ import annotations

from tests.benchmark_module import load_benchmark

S = load_benchmark("secagg_scale")


def test_log_shares_are_odd_at_least_three_and_never_above_the_cohort() -> None:
    assert [S.log_shares(n) for n in (3, 5, 10, 20, 40, 1000)] == [3, 3, 3, 5, 5, 11]
    assert all(S.log_shares(n) % 2 == 1 and 3 <= S.log_shares(n) <= n for n in range(3, 200))
    assert max(S.BYTES_COHORTS) <= 20 and max(S.SERVER_COHORTS) <= 40  # what this 2-core machine runs
