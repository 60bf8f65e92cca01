"""Whether a SecAgg+ round survives its dropouts: the chance that Flower 1.42's workflow completes when
``dropped`` of ``clients`` go silent after the share exchange.

Why: with few shares a dropout does not only cost time, it can end the round. Flower's ``SecAggPlusWorkflow``
shuffles the sampled nodes onto a ring and gives each the ``num_shares`` consecutive nodes around it (itself
included) as its share holders; after every stage it checks each sampled node, alive or not, and halts the
round ("Insufficient available nodes") unless at least ``reconstruction_threshold`` of its share holders are
still active (``_check_threshold``). A dropped client's own share is lost with it, so with 3 shares and a
threshold of 2 both of its neighbours must stay; at 10 % dropouts in a cohort of 100 that fails in most
rounds, while about log2(n) shares survive almost any. The ring is a fresh shuffle every round, so the
chance is over where the dropped clients land: counted here over ``draws`` seeded shuffles (exact for small
rings: :func:`completion_probability_exact`), and checked against real rounds by benchmarks/secagg_scale.py.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _check(clients: int, shares: int, threshold: int, dropped: int) -> None:
    if clients < 1 or not 0 <= dropped <= clients:
        raise ValueError(f"need 0 <= dropped <= clients and clients >= 1, got {dropped} of {clients}")
    if shares < 1 or threshold < 1:
        raise ValueError(f"shares and threshold must be >= 1, got {shares} and {threshold}")


def _window(clients: int, shares: int) -> range:
    """The ring offsets of a node's share holders: Flower makes ``shares`` odd (adding one) unless it is the
    whole cohort, then takes ``shares >> 1`` on each side."""
    if shares != clients and shares % 2 == 0:
        shares += 1
    half = shares >> 1
    return range(-half, half + 1)


def _completes(alive: np.ndarray, offsets: range, threshold: int) -> np.ndarray:
    """Per ring (row of ``alive``: who is active, in ring order): does every node keep ``threshold`` active
    share holders? A holder counted twice on a small ring (offsets wrapping) counts once, as in Flower's set."""
    n = alive.shape[-1]
    distinct = sorted({o % n for o in offsets})
    count = np.zeros(alive.shape, dtype=np.int32)
    for o in distinct:
        count += np.roll(alive, -o, axis=-1)
    return np.all(count >= threshold, axis=-1)


def completion_probability(clients: int, shares: int, threshold: int, dropped: int, draws: int = 4000,
                           seed: int = 0) -> float:
    """The share of ``draws`` seeded ring shuffles in which the round completes (Flower 1.42's rule, module
    docstring): ``dropped`` of ``clients`` silent after the share exchange, ``shares`` holders per node
    (resolved: 3, log2, or the cohort), ``threshold`` of them needed."""
    _check(clients, shares, threshold, dropped)
    if dropped == 0:
        return 1.0 if min(shares, clients) >= threshold else 0.0
    rng = np.random.default_rng(seed)
    alive = np.ones((draws, clients), dtype=np.int32)
    for row in alive:  # a ring position for each dropped client, without replacement
        row[rng.choice(clients, size=dropped, replace=False)] = 0
    return float(np.mean(_completes(alive, _window(clients, shares), threshold)))


def completion_probability_exact(clients: int, shares: int, threshold: int, dropped: int) -> float:
    """The same chance over every placement of the dropped clients (small rings only: C(clients, dropped))."""
    _check(clients, shares, threshold, dropped)
    if math.comb(clients, dropped) > 200_000:
        raise ValueError("too many placements to enumerate; use completion_probability")
    offsets, ok, total = _window(clients, shares), 0, 0
    for dead in itertools.combinations(range(clients), dropped):
        alive = np.ones(clients, dtype=np.int32)
        alive[list(dead)] = 0
        ok += bool(_completes(alive, offsets, threshold))
        total += 1
    return ok / total
