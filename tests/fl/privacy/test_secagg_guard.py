"""The client's weight clipping and clipped count, and the server's wrap guard, in Flower's real SecAgg+
protocol on the loopback grid."""

from __future__ import annotations

from typing import Any

import numpy as np
from flwr.client import NumPyClient
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedbw.fl.privacy.bounds import GuardedSecAggPlusWorkflow, SecAggRound, secagg_bounds_mod
from fedbw.fl.privacy.loopback import LoopbackGrid, run_legacy
from fedbw.fl.privacy.secagg_packed import PackedSecAggPlusWorkflow, packed_secaggplus_mod

from .test_secagg_wrap import CLIP, MAX_WEIGHT, _aggregate, _truth
from .toyapp import fedavg, global_model

SHAPE = (7,)


class FixedClient(NumPyClient):
    """Returns a given update and weight (by partition id)."""

    def __init__(self, update: np.ndarray, weight: int) -> None:
        self.update, self.weight = update, weight

    def fit(self, parameters: list[np.ndarray], config: dict[str, Any]):
        return [self.update], self.weight, {}


def _run(updates, weights, mods, cls=PackedSecAggPlusWorkflow, t=2**22, m=2**32):
    def client_fn(context):
        i = int(context.node_config["partition-id"])
        return FixedClient(updates[i], weights[i]).to_client()

    seen: list[SecAggRound] = []
    wf = cls(num_shares=3, reconstruction_threshold=2, clipping_range=CLIP, quantization_range=t,
             modulus_range=m, max_weight=MAX_WEIGHT, observer=seen.append)
    grid = LoopbackGrid(ClientApp(client_fn=client_fn, mods=mods), len(updates))
    initial = [np.zeros(SHAPE, dtype=np.float32)]
    ctx = run_legacy(grid, fedavg(len(updates), initial), 1, wf)
    return global_model(ctx)[0], seen


def test_weights_are_clipped_to_max_weight_and_clipped_values_counted():
    updates = [np.full(SHAPE, v, dtype=np.float32) for v in (0.5, -0.5, 9.0)]  # 9.0 > clipping_range
    weights = [400, 1000, 2500]  # 2,500 > max_weight: clipped to 1,000
    out, (seen,) = _run(updates, weights, [packed_secaggplus_mod, secagg_bounds_mod])
    truth, tol = _truth(updates, weights, 2**22)
    assert np.max(np.abs(out - truth)) <= tol + 1e-6  # the weighted mean with weights 400, 1000, 1000
    assert seen.cohort == 3 and seen.wrapped == 0
    assert seen.clipped == 1 + SHAPE[0]  # one weight, and the third client's 7 values at r = 1


def test_a_sum_that_would_wrap_is_halted_not_released():
    """Stock clients without fedbw's weight clipping declare 6 × max_weight; with M = 2^26, T = 2^22 the
    weight factor's sum (3 · 6 · 2^22) passes M: the guard halts the round, the model stays as it was."""
    updates = [np.full(SHAPE, 0.1, dtype=np.float32)] * 3
    out, (seen,) = _run(updates, [6000] * 3, [secaggplus_mod], cls=GuardedSecAggPlusWorkflow, m=2**26)
    assert seen.wrapped == 1 and seen.clipped is None  # stock clients report no clipped count
    assert np.array_equal(out, np.zeros(SHAPE, dtype=np.float32))
    out, (seen,) = _run(updates, [6000] * 3, [secaggplus_mod, secagg_bounds_mod], cls=GuardedSecAggPlusWorkflow,
                        m=2**26)
    assert seen.wrapped == 0 and seen.clipped == 3  # with the weights clipped it aggregates
    assert np.allclose(out, 0.1, atol=1e-5)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(3, 9), seed=st.integers(0, 2**32 - 1), heavy=st.booleans())
def test_real_protocol_agrees_with_the_arithmetic(n, seed, heavy):
    rng = np.random.default_rng(seed)
    updates = [rng.normal(0, 4.0, SHAPE).astype(np.float32) for _ in range(n)]
    weights = [int(w) for w in rng.integers(1, int(MAX_WEIGHT * (3 if heavy else 1)), n)]
    out, (seen,) = _run(updates, weights, [packed_secaggplus_mod, secagg_bounds_mod])
    arith, clipped, wrapped = _aggregate(updates, weights, 2**22, 2**32)
    truth, tol = _truth(updates, weights, 2**22)
    assert seen.wrapped == wrapped == 0 and seen.clipped == clipped
    assert np.max(np.abs(out - truth)) <= tol + 1e-6  # + float32 rounding of the packed aggregate
    assert np.max(np.abs(out - arith)) <= 2 * tol + 1e-6  # both are the mean up to stochastic rounding
