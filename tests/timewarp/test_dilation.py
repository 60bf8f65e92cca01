"""Dilation, the one object a dilated emulation's parts read: what it scales and how it undilates."""

from __future__ import annotations

import math

import pytest

from fedbw.timewarp import NO_DILATION, Dilation


def test_what_dilation_by_k_scales_and_how_a_duration_is_undilated() -> None:
    d = Dilation(4.0, t0_s=100.0, t0_wall_s=1000.0)
    assert d.slower(30.0) == 7.5 and d.slower(math.inf) == math.inf  # link rates ÷ K
    assert d.real_s(2.0) == 8.0 and d.emulated_s(8.0) == 2.0  # durations × K, reported ÷ K
    assert d.cpu_cores(2.0) == 0.5  # a CPU cap: the emulated machine's cores ÷ K
    assert d.time_scale == 0.25
    clock = d.clock()
    assert clock is not None and clock(108.0) == 102.0 and d.emulated_wall(1004.0) == 1001.0


def test_no_dilation_changes_nothing() -> None:
    assert not NO_DILATION.active and NO_DILATION.clock() is None
    assert (NO_DILATION.slower(30.0), NO_DILATION.real_s(2.0), NO_DILATION.cpu_cores(2.0)) == (30.0, 2.0, 2.0)
    assert NO_DILATION.emulated(123.4) == 123.4


@pytest.mark.parametrize("bad", [0.5, math.inf, True])
def test_a_factor_below_one_or_not_finite_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="dilation factor"):
        Dilation(bad)  # type: ignore[arg-type]
