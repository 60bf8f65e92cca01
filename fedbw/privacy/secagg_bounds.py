"""SecAgg+'s integer arithmetic as pure code: when the masked sum can wrap, and what a client clips.

Flower's SecAgg+ (``secaggplus_mod`` / ``SecAggPlusWorkflow``, 1.42) works on integers mod M =
``modulus_range``. Each client multiplies its parameters by its weight ratio r = num_examples /
``max_weight``, clips them to ±``clipping_range``, quantizes them to [0, T] (T = ``quantization_range``,
stochastic rounding into **int32**) and prepends the weight factor round(r·T). The server recovers
Σ values mod M; the sum is right only if no coordinate of it reaches M:

* parameters: each quantized value is ≤ T, so a cohort of n sums to ≤ n·T;
* the weight factor: Σ round(rᵢ·T), unbounded unless rᵢ ≤ 1, i.e. unless each client's weight is
  clipped to ``max_weight`` — which Flower asks for (it only warns) and fedbw's client enforces
  (:func:`clip_weight`). Then the factor obeys the parameters' bound.

So a config is safe iff n_max·T < M, with n_max the largest cohort the sampler can produce, M ≤ 2^32
(Flower's documented limit) and T < 2^31 (the int32 cast). The config checks call
:func:`wrap_problem`; the apps count what was clipped (:func:`count_clipped`) and what wrapped
(:func:`wrapped_values`) in every round, so a wrap can never go unnoticed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

#: Flower 1.42's SecAggPlusWorkflow documents ``modulus_range`` ≤ 2^32 (its default is 2^32 itself).
MAX_MODULUS = 2**32
#: Flower's stochastic rounding casts quantized values to int32.
MAX_QUANTIZATION = 2**31 - 1


def max_sum(cohort: int, quantization_range: int, max_weight_ratio: float = 1.0) -> float:
    """Largest value one coordinate of the integer sum can reach: n · T · max(1, r_max)."""
    return cohort * quantization_range * max(1.0, max_weight_ratio)


def max_safe_cohort(quantization_range: int, modulus_range: int) -> int:
    """The largest n with n·T < M (weights clipped to max_weight)."""
    return (modulus_range - 1) // quantization_range


def wrap_problem(cohort: int, quantization_range: int, modulus_range: int, key_cohort: str) -> str | None:
    """Why a SecAgg+ config can wrap or overflow (a sentence naming the knob to change), or None."""
    if modulus_range > MAX_MODULUS:
        return (f"privacy.secagg.modulus_range ({modulus_range}) is above 2^32, the limit Flower's SecAgg+ "
                f"documents; use 2**32 or less and lower quantization_range to fit more clients")
    if quantization_range > MAX_QUANTIZATION:
        return (f"privacy.secagg.quantization_range ({quantization_range}) does not fit the int32 values "
                f"Flower quantizes into; use at most 2**31 - 1")
    if max_sum(cohort, quantization_range) >= modulus_range:
        safe_t = (modulus_range - 1) // cohort
        return (f"SecAgg+ would wrap: {key_cohort} ({cohort}) × privacy.secagg.quantization_range "
                f"({quantization_range}) = {cohort * quantization_range} reaches privacy.secagg.modulus_range "
                f"({modulus_range}) (weights are clipped to max_weight, so the weight factor obeys the same "
                f"bound); lower quantization_range to at most {2 ** int(math.log2(safe_t)) if safe_t else 0} "
                f"(a power of two) or lower {key_cohort} to at most "
                f"{max_safe_cohort(quantization_range, modulus_range)}")
    return None


def clip_weight(num_examples: int, max_weight: float) -> tuple[int, bool]:
    """The weight a client may declare: num_examples capped at max_weight (whole examples); clipped?"""
    cap = max(1, math.floor(max_weight))
    return (cap, True) if num_examples > cap else (int(num_examples), False)


def weight_factor(num_examples: float, max_weight: float, quantization_range: int) -> int:
    """Flower's prepended weight factor q = round(num_examples / max_weight · T) (secaggplus_mod)."""
    return round(num_examples / max_weight * quantization_range)


def count_clipped(arrays: Iterable[np.ndarray], num_examples: float, max_weight: float,
                  quantization_range: int, clipping_range: float) -> int:
    """Values Flower's quantizer will clip: |dq(r)·x| > clipping_range, dq(r) = round(r·T)/T as it scales them."""
    dq = weight_factor(num_examples, max_weight, quantization_range) / quantization_range
    return int(sum(np.count_nonzero(np.abs(np.asarray(a, dtype=np.float64) * dq) > clipping_range)
                   for a in arrays))


def wrapped_values(weights: Sequence[float], vector_len: int, max_weight: float, quantization_range: int,
                   modulus_range: int) -> int:
    """Values of one round's sum that wrapped or may have wrapped mod M.

    The weight factor is known exactly (Flower sends each client's num_examples beside its masked
    vector): it counts 1 if Σ round(rᵢ·T) ≥ M. Parameter coordinates are each ≤ T, so none can wrap while
    n·T < M; past that the server cannot tell which did, and all ``vector_len`` count.
    """
    factor = sum(weight_factor(w, max_weight, quantization_range) for w in weights)
    wrapped = 1 if factor >= modulus_range else 0
    if len(weights) * quantization_range >= modulus_range:
        wrapped += vector_len
    return wrapped
