"""Exposed communication: AllReduce time that no compute runs beside."""

from __future__ import annotations

import pytest

from fedbw.collectives.exposure import breakdown, clip, length, minus, union


def test_union_merges_overlaps_and_drops_empty() -> None:
    assert union([(5, 7), (0, 2), (1, 3), (4, 4), (6, 8)]) == [(0, 3), (5, 8)]
    assert length([(0, 2), (1, 3)]) == 3


def test_minus_and_clip() -> None:
    assert minus([(0, 10)], [(2, 3), (5, 7)]) == [(0, 2), (3, 5), (7, 10)]
    assert minus([(0, 10)], [(-1, 11)]) == []
    assert minus([(0, 4), (6, 8)], []) == [(0, 4), (6, 8)]
    assert clip([(0, 5), (8, 12)], (3, 10)) == [(3, 5), (8, 10)]


def test_breakdown_of_an_overlapped_step() -> None:
    # step 0..100; compute 0..60 and 70..80; AllReduce 50..75 and 85..95 (two buckets)
    b = breakdown((0, 100), [(0, 60), (70, 80)], [(50, 75), (85, 95)], scale=1e-3)
    assert b.step_s == pytest.approx(0.1) and b.compute_s == pytest.approx(0.07)
    assert b.comm_s == pytest.approx(0.035)
    assert b.exposed_s == pytest.approx(0.020)  # 60..70 and 85..95
    assert b.overlapped_s == pytest.approx(0.015) and b.exposed_share == pytest.approx(0.2)


def test_no_overlap_exposes_everything() -> None:
    b = breakdown((0, 10), [(0, 6)], [(6, 10)])
    assert b.exposed_s == b.comm_s == 4
