"""The fill pattern and the check (#wrong), without starting any process group."""

from __future__ import annotations

import pytest
import torch

from fedbw.collectives.allreduce_rank import count_wrong, expected_sum, fill_pattern, pattern_buffer

DEV = torch.device("cpu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("world", [2, 3, 8])
def test_sum_of_patterns_is_the_expected_sum(dtype: torch.dtype, world: int) -> None:
    count = 1001  # not a multiple of the period
    total = sum(pattern_buffer(count, r, dtype, DEV).float() for r in range(world))
    expected = expected_sum(count, world, dtype, DEV)
    assert expected.is_contiguous() and expected.numel() == count
    assert count_wrong(total.to(dtype), expected) == 0


def test_patterns_differ_by_rank_and_index() -> None:
    a, b = pattern_buffer(9, 0, torch.float32, DEV), pattern_buffer(9, 1, torch.float32, DEV)
    assert a.tolist() == [1, 0, 0] * 3 and b.tolist() == [0, 0, 1] * 3


def test_a_wrong_or_missing_contribution_is_counted() -> None:
    world, count = 4, 300
    total = sum(pattern_buffer(count, r, torch.float32, DEV) for r in range(world - 1))  # one rank missing
    assert count_wrong(total, expected_sum(count, world, torch.float32, DEV)) == 100
    buf = torch.empty(count)
    fill_pattern(buf, 2)
    assert count_wrong(buf, pattern_buffer(count, 2, torch.float32, DEV)) == 0
    buf[7] = 5.0
    assert count_wrong(buf, pattern_buffer(count, 2, torch.float32, DEV)) == 1
