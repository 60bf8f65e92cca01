"""α and β fitted to measured tables: exact on model data, relative residuals, no negative costs."""

from __future__ import annotations

import math

import pytest

from fedbw.collectives.fit import Point, fit_alpha_beta, ring_time_s
from fedbw.errors import RunError
from fedbw.netmodel import allreduce


def test_fit_recovers_alpha_and_beta_from_model_times() -> None:
    alpha, busbw = 25e-6, 1.2  # s, GB/s
    pts = [Point(n, p, allreduce(n, p, busbw, alpha, "ring").time_s) for p in (2, 4, 8) for n in (1e3, 1e5, 1e7, 1e9)]
    fit = fit_alpha_beta(pts)
    assert fit.alpha_s == pytest.approx(alpha, rel=1e-9)
    assert fit.busbw_gbps == pytest.approx(busbw, rel=1e-9)
    assert fit.max_residual < 1e-9 and fit.points == 12
    assert fit.predict_s(1e6, 4) == pytest.approx(ring_time_s(1e6, 4, alpha, 1 / (busbw * 1e9)))


def test_every_size_counts_alike_relative_residuals() -> None:
    # A 10 % error at the smallest size must move α, not vanish beside the largest size's seconds.
    alpha, beta = 1e-4, 1e-9
    pts = [Point(n, 2, ring_time_s(n, 2, alpha, beta)) for n in (1e3, 1e4, 1e8, 1e9)]
    pts[0] = Point(1e3, 2, pts[0].time_s * 1.1)
    fit = fit_alpha_beta(pts)
    assert fit.alpha_s > alpha
    assert len(fit.residuals) == 4 and 0 < fit.rms_residual < 0.1
    assert fit.residuals[0] < 0  # the model under-predicts the slowed point


def test_negative_alpha_is_pinned_at_zero() -> None:
    # Times that grow faster than linearly would need α < 0 for a straight line.
    pts = [Point(1e6, 2, 1e-3), Point(2e6, 2, 2.5e-3), Point(4e6, 2, 6e-3)]
    fit = fit_alpha_beta(pts)
    assert fit.alpha_s == 0.0 and fit.beta_s_per_byte > 0


def test_too_few_points() -> None:
    with pytest.raises(RunError):
        fit_alpha_beta([Point(1e6, 2, 1e-3)])
    # Times that fall with size would need β < 0: pinned at 0, no bandwidth term at all.
    flat = fit_alpha_beta([Point(1e3, 2, 2e-3), Point(1e6, 2, 1e-3)])
    assert flat.beta_s_per_byte == 0.0 and math.isinf(flat.busbw_gbps) and flat.alpha_s > 0
