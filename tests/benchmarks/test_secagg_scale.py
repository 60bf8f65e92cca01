"""benchmarks/secagg_scale.py's design and the share rule it shares with the config, without running it."""

from __future__ import annotations

from tests.benchmark_module import load_benchmark

from fedbw.config.privacy import log2_shares

S = load_benchmark("secagg_scale")


def test_log2_shares_are_odd_at_least_three_and_never_above_the_cohort() -> None:
    assert [log2_shares(n) for n in (3, 5, 10, 20, 40, 1000)] == [3, 3, 3, 5, 5, 11]
    assert all(log2_shares(n) % 2 == 1 and 3 <= log2_shares(n) <= n for n in range(3, 200))
    assert max(S.BYTES_COHORTS) <= 20 and max(S.SERVER_COHORTS) <= 40  # what this 2-core machine runs
