"""Synthetic traces (fedbw/traces/synthetic.py): a shape measured from a series, and a draw from it that
keeps the mean exactly and the spread, persistence and outages near the source's."""

from __future__ import annotations

import math
import random

import pytest

from fedbw.traces import RateSeries
from fedbw.traces.synthetic import RateShape, fit_shape, generate


def _ar1_series(n: int, mean: float, log_sd: float, ac1: float, out_every: int, seed: int) -> RateSeries:
    rng = random.Random(seed)
    z, steps = 0.0, []
    for i in range(n):
        rate = 0.0 if out_every and i % out_every == out_every - 1 else mean * math.exp(z)
        steps.append((float(i), round(rate, 6)))
        z = ac1 * z + rng.gauss(0.0, log_sd * math.sqrt(1 - ac1 ** 2))
    return RateSeries(tuple(steps), float(n))


def test_fit_measures_what_a_known_process_was_drawn_with() -> None:
    series = _ar1_series(20_000, 5.0, 0.6, 0.8, out_every=20, seed=1)
    shape = fit_shape(series)
    assert shape.mean_mbps == pytest.approx(series.mean())
    assert shape.log_sd == pytest.approx(0.6, rel=0.1)
    assert shape.ac1 == pytest.approx(0.8 * 19 / 20, abs=0.06)  # every 20th step left out of the up steps
    assert shape.outage_share == pytest.approx(0.05, abs=1e-9) and shape.outage_mean_steps == 1.0


def test_a_draw_keeps_the_mean_exactly_and_the_rest_near() -> None:
    shape = RateShape(mean_mbps=6.0, log_sd=0.7, ac1=0.75, outage_share=0.1, outage_mean_steps=3.0)
    series = generate(shape, 20_000, seed=7)
    assert series.duration_s == 20_000 and series.mean() == pytest.approx(6.0, rel=1e-4)
    again = fit_shape(series)
    assert again.log_sd == pytest.approx(0.7, rel=0.1) and again.ac1 == pytest.approx(0.75, abs=0.05)
    assert again.outage_share == pytest.approx(0.1, abs=0.02) and again.outage_mean_steps == pytest.approx(3.0, rel=0.15)
    assert generate(shape, 20_000, seed=7) == series and generate(shape, 20_000, seed=8) != series


def test_no_outages_means_the_link_is_never_down() -> None:
    series = generate(RateShape(mean_mbps=2.0, log_sd=0.5, ac1=0.5, outage_share=0.0, outage_mean_steps=1.0), 500, 0)
    assert series.percentile(0) > 0


@pytest.mark.parametrize("bad", [dict(mean_mbps=0.0), dict(ac1=1.0), dict(outage_share=1.0), dict(log_sd=-1.0),
                                 dict(outage_mean_steps=0.5), dict(step_s=0.0)])
def test_a_shape_refuses_numbers_that_cannot_be(bad: dict) -> None:
    good = dict(mean_mbps=1.0, log_sd=0.5, ac1=0.5, outage_share=0.1, outage_mean_steps=1.0)
    with pytest.raises(ValueError):
        RateShape(**{**good, **bad})


def test_a_series_shorter_than_two_steps_has_no_shape() -> None:
    with pytest.raises(ValueError, match="two steps"):
        fit_shape(RateSeries(((0.0, 1.0),), 1.5))
