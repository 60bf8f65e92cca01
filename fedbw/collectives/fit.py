"""α and β fitted to a measured AllReduce table, with the fit's residuals.

The ring model says t = 2(p−1)·α + 2(p−1)/p·n·β (Thakur et al. 2005; what gloo and NCCL's ring run).
Both terms are linear in the unknowns, so least squares fits them directly. Times in a sweep span
five orders of magnitude; plain least squares would let the largest sizes decide everything and
leave α meaningless, so the fit minimises *relative* residuals (each row weighted by 1/t) — every
size counts alike, as in a log-log plot. β folds in everything per byte the ranks pay (copies, the
reduction arithmetic, the link), so 1/β is the bus bandwidth the table sustained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from fedbw.errors import RunError


@dataclass(frozen=True)
class Point:
    size_bytes: float
    ranks: int
    time_s: float


@dataclass(frozen=True)
class AlphaBetaFit:
    alpha_s: float  #: latency per ring step
    beta_s_per_byte: float  #: seconds per byte on a rank's link (1 / bus bandwidth)
    points: int
    residuals: tuple[float, ...] = field(default_factory=tuple)  #: (model − measured) / measured, per point

    @property
    def busbw_gbps(self) -> float:
        """The bus bandwidth (GB/s, 10^9 B) the fit implies: 1/β."""
        return 1.0 / self.beta_s_per_byte / 1e9 if self.beta_s_per_byte > 0 else math.inf

    @property
    def rms_residual(self) -> float:
        return math.sqrt(sum(r * r for r in self.residuals) / len(self.residuals)) if self.residuals else 0.0

    @property
    def max_residual(self) -> float:
        return max((abs(r) for r in self.residuals), default=0.0)

    def predict_s(self, size_bytes: float, ranks: int) -> float:
        return ring_time_s(size_bytes, ranks, self.alpha_s, self.beta_s_per_byte)


def ring_time_s(size_bytes: float, ranks: int, alpha_s: float, beta_s_per_byte: float) -> float:
    """The ring model's AllReduce time (the same formula as ``fedbw.netmodel.allreduce(..., "ring")``)."""
    p = ranks
    return 2 * (p - 1) * alpha_s + 2 * (p - 1) / p * size_bytes * beta_s_per_byte


def fit_alpha_beta(points: Sequence[Point]) -> AlphaBetaFit:
    """Weighted least squares of the ring model to measured points (relative residuals).

    A coefficient that comes out negative (noise at a few sizes can do that) is pinned at 0 and the
    other refitted alone: a negative latency or bandwidth cost has no meaning.
    """
    pts = [p for p in points if p.time_s > 0 and p.ranks >= 2]
    if len(pts) < 2:
        raise RunError("fitting α and β needs at least two measured sizes with a positive time")
    x1 = np.array([2.0 * (p.ranks - 1) for p in pts])
    x2 = np.array([2.0 * (p.ranks - 1) / p.ranks * p.size_bytes for p in pts])
    t = np.array([p.time_s for p in pts])
    a = np.column_stack([x1 / t, x2 / t])
    ones = np.ones(len(pts))
    (alpha, beta), *_ = np.linalg.lstsq(a, ones, rcond=None)
    if alpha < 0 or beta < 0:
        col = 1 if alpha < 0 else 0  # keep the other coefficient
        only = float(np.dot(a[:, col], ones) / np.dot(a[:, col], a[:, col]))
        alpha, beta = (0.0, only) if col == 1 else (only, 0.0)
    model = alpha * x1 + beta * x2
    residuals = tuple(float(r) for r in (model - t) / t)
    return AlphaBetaFit(float(alpha), float(beta), len(pts), residuals)
