"""How far a round may fall from the model's expected round: the spread of Flower's unknown poll phases
and of the calibration's constants, as quantiles of a round's time.

Why: a round on a real deployment jumps by whole poll steps (the ServerApp's 3 s pull, an idle SuperNode's
3 s grid) with phases nobody knows, and each fitted constant is known only to its bootstrap interval. One
number hides both; a median with a central 80 % interval does not. The clock lays its expected round out
in lanes, one per quantile of the phases (:class:`~fedbw.netmodel.flower.DeploymentClock`); for the spread
it lays the same lanes out again with the constants drawn from their intervals (:func:`cost_draws`, a
Latin hypercube: each constant's draws cover its distribution in equal strata, independently of the
others), and a round's quantiles are those of all lanes' rounds, every lane weighing the same
(:func:`quantiles`). Drawing constants independently ignores the correlation of constants fitted jointly,
so the interval is if anything too wide; the held-out validation (benchmarks/validate.py) says how often
emulated rounds fall inside it.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from statistics import NormalDist

from fedbw.netmodel.flower_costs import FlowerCosts

#: Draws of the constants per phase lane when the calibration gives intervals (0: phases only).
DRAWS = 4
#: The quantiles a round reports: the low end of its central 80 % interval, the median, the high end.
INTERVAL = (0.10, 0.50, 0.90)
#: A calibration interval spans the 5th to the 95th percentile: ± this many standard deviations.
_Z95 = NormalDist().inv_cdf(0.95)


def cost_draws(costs: FlowerCosts, draws: int = DRAWS, seed: int = 0) -> list[FlowerCosts]:
    """``draws`` copies of ``costs`` with each constant of ``costs.intervals`` drawn from a split normal
    through its interval (median at the fitted value, each side's spread from that side of the interval,
    never below 0), the draws stratified per constant; empty without intervals."""
    if not costs.intervals or draws < 1:
        return []
    rng = random.Random(f"{seed}:cost-draws")
    normal = NormalDist()
    columns: dict[str, list[float]] = {}
    for name, low, high in costs.intervals:
        value = getattr(costs, name)
        strata = list(range(draws))
        rng.shuffle(strata)
        col = []
        for k in strata:
            z = normal.inv_cdf((k + 0.5) / draws)
            side = (value - low) if z < 0 else (high - value)
            col.append(max(0.0, value + z * max(side, 0.0) / _Z95))
        columns[name] = col
    return [dataclasses.replace(costs, **{name: col[d] for name, col in columns.items()}) for d in range(draws)]


def quantiles(values: Sequence[float], probs: Sequence[float] = INTERVAL) -> tuple[float, ...]:
    """The ``probs`` quantiles of equally weighted ``values``, the i-th smallest at (i + ½)/n and linear
    between (so n lanes at the quantiles (q + ½)/n of a phase give that phase's quantiles back)."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("quantiles of no values")
    out = []
    for p in probs:
        pos = p * n - 0.5
        if pos <= 0:
            out.append(xs[0])
        elif pos >= n - 1:
            out.append(xs[-1])
        else:
            i = int(pos)
            out.append(xs[i] + (pos - i) * (xs[i + 1] - xs[i]))
    return tuple(out)
