"""Packed SecAgg+ against stock Flower SecAgg+, on the in-process loopback grid (real messages, no Ray)."""

from __future__ import annotations

import numpy as np
import pytest
from flwr.client.mod import secaggplus_mod
from flwr.common import bytes_to_ndarray, ndarray_to_bytes
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key
from flwr.server.workflow import SecAggPlusWorkflow

from fedbw.fl.privacy.secagg_packed import (
    PackedSecAggPlusWorkflow,
    pack_masked_vector,
    packed_dtype,
    packed_secaggplus_mod,
    unpack_masked_vector,
)

from .toyapp import SHAPES, exact_average, global_model, model, num_examples, run

N = 5
CLIP, T, M, MAX_WEIGHT = 8.0, 2**22, 2**32, 1000.0


def quantization_tolerance(pids: list[int]) -> float:
    """Stochastic rounding errs < one step (2·clip/T) per client value, in units of that client's
    weight ratio r = n/max_weight; the weighted average divides the summed error by Σr."""
    step = 2 * CLIP / T
    return len(pids) * step / sum(num_examples(p) / MAX_WEIGHT for p in pids)


def workflow(cls, **kw):
    return cls(num_shares=3, reconstruction_threshold=2, clipping_range=CLIP, quantization_range=T,
               modulus_range=M, max_weight=MAX_WEIGHT, **kw)


def max_err(a, b):
    return max(float(np.abs(x.astype(np.float64) - y).max()) for x, y in zip(a, b))


def test_packed_dtype_is_smallest_unsigned_type():
    assert packed_dtype(2**8) == np.uint8
    assert packed_dtype(2**16) == np.uint16
    assert packed_dtype(2**20) == np.uint32
    assert packed_dtype(2**32) == np.uint32
    assert packed_dtype(2**40) == np.uint64


def test_pack_roundtrip_and_rejects_unreduced_values():
    arr = np.array([0, 1, 2**32 - 1, 12345], dtype=np.int64)
    packed = pack_masked_vector([ndarray_to_bytes(arr)], 2**32)
    assert bytes_to_ndarray(packed[0]).dtype == np.uint32
    assert np.array_equal(bytes_to_ndarray(unpack_masked_vector(packed)[0]), arr)
    with pytest.raises(ValueError, match="modulus"):
        pack_masked_vector([ndarray_to_bytes(np.array([2**32], dtype=np.int64))], 2**32)


def test_packed_aggregate_equals_stock_and_truth_within_quantization_error():
    _, stock_ctx = run([secaggplus_mod], workflow(SecAggPlusWorkflow))
    _, packed_ctx = run([packed_secaggplus_mod], workflow(PackedSecAggPlusWorkflow))
    truth = exact_average(list(range(N)))
    tol = quantization_tolerance(list(range(N)))
    stock, packed = global_model(stock_ctx), global_model(packed_ctx)
    assert [a.shape for a in packed] == SHAPES
    assert all(a.dtype == np.float64 for a in stock)  # stock Flower: the aggregate comes back float64
    assert all(a.dtype == np.float32 for a in packed)  # packed: the global model keeps its dtype
    assert max_err(stock, truth) <= tol
    assert max_err(packed, truth) <= tol + 1e-6  # + float32 rounding of the aggregate
    assert max_err(packed, [s for s in stock]) <= 2 * tol + 1e-6
    assert max_err(packed, truth) > 0  # it really went through quantization


def _bytes(grid, stage, group="1"):
    ex = [e for e in grid.exchanges if e.stage == stage and e.group_id == group]
    assert len(ex) == N
    return ex[0].bytes_down, ex[0].bytes_up


def test_uplink_and_downlink_bytes_vs_plain_float32():
    plain_grid, _ = run([], None, rounds=2)
    stock_grid, _ = run([secaggplus_mod], workflow(SecAggPlusWorkflow), rounds=2)
    packed_grid, _ = run([packed_secaggplus_mod], workflow(PackedSecAggPlusWorkflow), rounds=2)
    _, plain_up = _bytes(plain_grid, "train")
    _, stock_up = _bytes(stock_grid, "collect_masked_vectors")
    _, packed_up = _bytes(packed_grid, "collect_masked_vectors")
    assert packed_up <= 1.02 * plain_up  # the target: within 2 % of a plain float32 upload
    assert stock_up >= 1.9 * plain_up  # stock: int64 on the wire
    # Downloads: stock's float64 aggregate doubles round 2's model download, packed's does not.
    stock_down1, _ = _bytes(stock_grid, "collect_masked_vectors", "1")
    stock_down2, _ = _bytes(stock_grid, "collect_masked_vectors", "2")
    packed_down1, _ = _bytes(packed_grid, "collect_masked_vectors", "1")
    packed_down2, _ = _bytes(packed_grid, "collect_masked_vectors", "2")
    assert stock_down2 >= 1.9 * stock_down1
    assert packed_down2 <= 1.001 * packed_down1


@pytest.mark.parametrize("cls,mod", [(SecAggPlusWorkflow, secaggplus_mod),
                                     (PackedSecAggPlusWorkflow, packed_secaggplus_mod)])
def test_dropout_below_threshold_still_aggregates_the_survivors(cls, mod):
    dropped = {}

    def drop(node_id, group, stage):
        if stage == "collect_masked_vectors" and not dropped:
            dropped[node_id] = True  # the first client addressed never returns its masked vector
        return node_id in dropped and stage in ("collect_masked_vectors", "unmask")

    grid, ctx = run([mod], workflow(cls), drop=drop)
    survivors = sorted(grid.partition[nid] for nid in grid.node_ids if nid not in dropped)
    assert len(survivors) == N - 1
    assert max_err(global_model(ctx), exact_average(survivors)) <= quantization_tolerance(survivors) + 1e-6


def test_too_many_dropouts_halt_the_round_without_changing_the_model():
    def drop(node_id, group, stage):
        return stage == "collect_masked_vectors" and node_id % 2 == 0  # 3 of 5 go silent

    grid, ctx = run([packed_secaggplus_mod], workflow(PackedSecAggPlusWorkflow), drop=drop)
    assert max_err(global_model(ctx), model(999)) == 0.0  # the initial model: nothing was aggregated


def test_server_only_ever_holds_masked_vectors():
    received = []  # (sender, arrays beside the vector, masked vector) exactly as it arrived

    def capture(msg):
        cfg = msg.content.config_records.get(RECORD_KEY_CONFIGS)
        if cfg is not None and Key.MASKED_PARAMETERS in cfg:
            received.append((msg.metadata.src_node_id, sum(len(r) for r in msg.content.array_records.values()),
                             [bytes_to_ndarray(b) for b in cfg[Key.MASKED_PARAMETERS]]))

    grid, _ = run([packed_secaggplus_mod], workflow(PackedSecAggPlusWorkflow), on_reply=capture)
    assert len(received) == N
    for src, plain_arrays, vec in received:
        assert plain_arrays == 0  # no plain parameters travel beside the masked vector
        assert all(a.dtype == np.uint32 for a in vec)
        values = np.concatenate([a.ravel() for a in vec[1:]]).astype(np.float64)
        # An honest quantized update lies in [0, T·r] (r ≤ 1); masked values are uniform on [0, M).
        assert (values < T).mean() < 0.01
        hist, _ = np.histogram(values, bins=16, range=(0, M))
        expected = values.size / 16
        assert np.all(np.abs(hist - expected) < 0.1 * expected)
        naive = (values / T) * 2 * CLIP - CLIP  # "dequantize" the masked vector as if it were plain
        true = np.concatenate([a.ravel() for a in model(grid.partition[src])])
        assert abs(np.corrcoef(naive, true)[0, 1]) < 0.05


def test_stock_clients_against_the_packed_workflow_still_aggregate():
    _, ctx = run([secaggplus_mod], workflow(PackedSecAggPlusWorkflow))
    out = global_model(ctx)
    assert all(a.dtype == np.float32 for a in out)
    assert max_err(out, exact_average(list(range(N)))) <= quantization_tolerance(list(range(N))) + 1e-6


def test_same_quantization_gives_the_identical_aggregate():
    """With Flower's stochastic rounding fed the same random draws, packed and stock SecAgg+ unmask the
    same integer sum: packed's global model is stock's float64 aggregate, rounded to float32, exactly."""
    import random

    def aggregate(mods, cls):
        random.seed(7)
        np.random.seed(7)  # flwr's _stochastic_round draws from numpy's global generator
        return global_model(run(mods, workflow(cls))[1])

    stock = aggregate([secaggplus_mod], SecAggPlusWorkflow)
    packed = aggregate([packed_secaggplus_mod], PackedSecAggPlusWorkflow)
    assert all(np.array_equal(s.astype(np.float32), p) for s, p in zip(stock, packed))
    np.random.seed(8)
    other = global_model(run([secaggplus_mod], workflow(SecAggPlusWorkflow))[1])
    assert not all(np.array_equal(s, o) for s, o in zip(stock, other))  # the seed really decides the rounding
