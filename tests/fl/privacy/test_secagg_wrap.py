"""SecAgg+ never wraps silently: weights are clipped, configs that can wrap are refused, and what was
clipped or wrapped is counted.

The property tests draw cohorts up to 1,000 clients. At that size the full protocol (ECDH, Shamir,
Fernet per client pair) is too slow to run per example, so :func:`_aggregate` runs the protocol's
*integer arithmetic* client by client with Flower's own functions — weight clipping (fedbw's mod),
``quantize``, ``factor_combine``, masking mod M, fedbw's packed encoding, Flower's unmask arithmetic
(the six lines after ``parameters_mod`` in ``SecAggPlusWorkflow.unmask_stage``, copied in
:func:`_flower_unmask`) — with one random mask per client that cancels in the sum as the protocol's
masks do. :func:`test_real_protocol_agrees_with_the_arithmetic` runs the real protocol for small cohorts
and checks it gives the same answer.
"""

from __future__ import annotations

import numpy as np
import pytest
from flwr.common import bytes_to_ndarray, ndarray_to_bytes
from flwr.common.secure_aggregation.ndarrays_arithmetic import factor_combine, factor_extract, parameters_mod
from flwr.common.secure_aggregation.quantization import dequantize, quantize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedbw.config import config_from_dict
from fedbw.errors import ConfigError
from fedbw.fl.privacy.secagg_packed import pack_masked_vector, unpack_masked_vector
from fedbw.privacy.secagg_bounds import clip_weight, count_clipped, weight_factor, wrapped_values

CLIP, MAX_WEIGHT = 8.0, 1000.0


def _config(n: int, t: int, m: int):
    return config_from_dict({"engine": "estimate", "clients": {"total": n, "per_round": n},
                             "privacy": {"secagg": {"enabled": True, "mode": "packed", "quantization_range": t,
                                                    "modulus_range": m, "num_shares": min(n, 3),
                                                    "reconstruction_threshold": 2}}})


def _flower_unmask(recon: list[np.ndarray], active: int, clip: float, t: int) -> list[np.ndarray]:
    """flwr/server/workflow/secure_aggregation/secaggplus_workflow.py, unmask_stage, after parameters_mod."""
    q_total_ratio, recon = factor_extract(recon)
    inv_dq_total_ratio = t / q_total_ratio
    aggregated = dequantize(recon, clip, t)
    offset = -(active - 1) * clip
    for vec in aggregated:
        vec += offset
        vec *= inv_dq_total_ratio
    return aggregated


def _aggregate(updates: list[np.ndarray], weights: list[int], t: int, m: int, clip_weights: bool = True,
               rng: np.random.Generator | None = None) -> tuple[np.ndarray, int, int]:
    """(aggregate, values clipped, values wrapped) of one packed SecAgg+ round, client by client."""
    rng = rng or np.random.default_rng(0)
    total: list[np.ndarray] | None = None
    mask_sum = None
    clipped = 0
    declared = []
    for x, w in zip(updates, weights):
        if clip_weights:
            w, was_clipped = clip_weight(w, MAX_WEIGHT)
            clipped += int(was_clipped)
        declared.append(w)
        clipped += count_clipped([x], w, MAX_WEIGHT, t, CLIP)
        q_ratio = weight_factor(w, MAX_WEIGHT, t)
        vec = factor_combine(q_ratio, quantize([x * (q_ratio / t)], CLIP, t))
        vec = [v.astype(np.int64) for v in vec]
        mask = [rng.integers(0, m, v.shape, dtype=np.int64) for v in vec]
        masked = parameters_mod([v + k for v, k in zip(vec, mask)], m)
        wire = pack_masked_vector([ndarray_to_bytes(v) for v in masked], m)  # what travels
        got = [bytes_to_ndarray(b) for b in unpack_masked_vector(wire)]
        total = got if total is None else [a + b for a, b in zip(total, got)]
        mask_sum = mask if mask_sum is None else [a + b for a, b in zip(mask_sum, mask)]
    assert total is not None and mask_sum is not None
    recon = parameters_mod([a - b for a, b in zip(total, mask_sum)], m)
    wrapped = wrapped_values(declared, updates[0].size, MAX_WEIGHT, t, m)
    return _flower_unmask(recon, len(updates), CLIP, t)[0], clipped, wrapped


def _truth(updates, weights, t):
    """The float weighted mean SecAgg+ approximates: r·x clipped to ±clip, weights clipped to max_weight."""
    ratios = [weight_factor(clip_weight(w, MAX_WEIGHT)[0], MAX_WEIGHT, t) / t for w in weights]
    s = sum(np.clip(r * x.astype(np.float64), -CLIP, CLIP) for r, x in zip(ratios, updates))
    return s / sum(ratios), len(updates) * (2 * CLIP / t) / sum(ratios)


@st.composite
def rounds(draw):
    n = draw(st.integers(3, 1000))  # SecAgg+ needs num_shares ≥ 3 clients
    t = 2 ** draw(st.integers(8, 24))
    m = 2 ** draw(st.integers(16, 33))  # 2^33: above Flower's limit, must be refused
    size = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    heavy = draw(st.booleans())  # weights up to 2 × max_weight (examples over several local epochs)
    return n, t, m, size, seed, heavy


@pytest.mark.slow  # ≈ 8 s: 60 cohorts of up to 1,000 clients
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds())
def test_packed_aggregate_equals_the_float_mean_within_quantization_error_or_the_config_is_refused(case):
    n, t, m, size, seed, heavy = case
    try:
        _config(n, t, m)
    except ConfigError as exc:
        assert m > 2**32 or t >= m or n * t >= m, f"refused a safe config: {exc}"
        return
    assert n * t < m <= 2**32  # what validation guarantees
    rng = np.random.default_rng(seed)
    updates = [rng.normal(0, 4.0, size).astype(np.float32) for _ in range(n)]  # some beyond ±clip
    weights = [int(w) for w in rng.integers(1, int(MAX_WEIGHT * (2 if heavy else 1)) + 1, n)]
    got, clipped, wrapped = _aggregate(updates, weights, t, m, rng=rng)
    truth, tol = _truth(updates, weights, t)
    assert wrapped == 0
    assert np.max(np.abs(got - truth)) <= tol * (1 + 1e-9) + 1e-9
    ratios = [weight_factor(clip_weight(w, MAX_WEIGHT)[0], MAX_WEIGHT, t) / t for w in weights]
    expected_clipped = sum(int(np.count_nonzero(np.abs(r * u.astype(np.float64)) > CLIP)) for r, u in zip(ratios, updates))
    assert clipped == expected_clipped + sum(w > MAX_WEIGHT for w in weights)


def test_the_issues_thousand_client_case_wraps_without_weight_clipping_and_not_with_it():
    """1,000 clients at T = 2^22, M = 2^32 pass the n·T < M check; a weight ratio of 1.05 (e.g. 1,050
    examples seen over local epochs, max_weight 1,000) made Flower's weight factor wrap."""
    n, t, m = 1000, 2**22, 2**32
    _config(n, t, m)  # accepted
    rng = np.random.default_rng(1)
    updates = [rng.normal(0, 0.1, 3).astype(np.float32) for _ in range(n)]
    weights = [1050] * n
    bad, _, wrapped = _aggregate(updates, weights, t, m, clip_weights=False, rng=rng)
    truth, tol = _truth(updates, weights, t)
    assert wrapped == 1  # counted: the weight factor's sum 1000 · round(1.05 · 2^22) ≥ 2^32
    assert np.max(np.abs(bad - truth)) > 100 * tol  # and the aggregate is garbage
    good, clipped, wrapped = _aggregate(updates, weights, t, m, rng=rng)
    assert wrapped == 0 and clipped == n  # every weight clipped to max_weight, nothing wrapped
    assert np.max(np.abs(good - truth)) <= tol


@pytest.mark.parametrize("sets, match", [
    ({"modulus_range": 2**33, "quantization_range": 2**20}, "above 2\\^32"),
    ({"modulus_range": 2**32, "quantization_range": 2**31}, "int32"),
])
def test_configs_flower_cannot_run_are_refused(sets, match):
    with pytest.raises(ConfigError, match=match):
        config_from_dict({"engine": "estimate", "clients": {"total": 3, "per_round": 3},
                          "privacy": {"secagg": {"enabled": True, "num_shares": 3, **sets}}})


def test_wrap_refusal_names_the_knobs_and_safe_values():
    with pytest.raises(ConfigError) as exc:
        _config(1024, 2**22, 2**32)
    text = str(exc.value)
    assert "clients.per_round (1024)" in text and "quantization_range" in text
    assert "at most 2097152" in text and "at most 1023" in text  # 2^21, and (2^32 − 1) // 2^22
    _config(1023, 2**22, 2**32)


def test_poisson_sampling_with_secagg_is_refused():
    with pytest.raises(ConfigError, match="Poisson cohort"):
        config_from_dict({"engine": "estimate", "clients": {"sampling": "poisson"},
                          "privacy": {"secagg": {"enabled": True}}})
