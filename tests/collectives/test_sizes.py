"""--sizes, --ranks and --dtype read as nccl-tests reads them."""

from __future__ import annotations

import pytest

from fedbw.collectives.sizes import element_count, parse_dtype, parse_ranks, parse_sizes
from fedbw.errors import ConfigError


def test_begin_end_defaults_to_factor_two_like_nccl_tests() -> None:
    sizes = parse_sizes("1K:64M")
    assert sizes[0] == 1024 and sizes[-1] == 64 * 2**20
    assert len(sizes) == 17 and all(b == 2 * a for a, b in zip(sizes, sizes[1:]))


def test_explicit_factor_single_size_and_units() -> None:
    assert parse_sizes("8:128:4") == [8, 32, 128]
    assert parse_sizes("256M") == [256 * 2**20]
    assert parse_sizes("2kb") == [2048]
    assert parse_sizes("1G") == [2**30]


@pytest.mark.parametrize("bad", ["", "abc", "1K:2K:1", "64M:1K", "1:2:3:4", "0", "-4K", "1K:2K:x"])
def test_bad_sizes_are_config_errors(bad: str) -> None:
    with pytest.raises(ConfigError):
        parse_sizes(bad)


def test_ranks() -> None:
    assert parse_ranks("2,4,8") == [2, 4, 8]
    assert parse_ranks("2:16") == [2, 4, 8, 16]
    for bad in ("1", "x", "0:4", "2,1"):
        with pytest.raises(ConfigError):
            parse_ranks(bad)


def test_dtypes_and_element_counts() -> None:
    assert parse_dtype("bf16") == "bfloat16" and parse_dtype("half") == "float16" and parse_dtype("FLOAT") == "float32"
    with pytest.raises(ConfigError, match="float32, bfloat16 or float16"):
        parse_dtype("int8")
    assert element_count(1024, "float32") == 256
    assert element_count(1023, "float16") == 511  # cut to whole elements, as nccl-tests does
    assert element_count(1, "float32") == 1
