import math

import pytest

from fedbw.netmodel import payload
from fedbw.netmodel.payload import masked_value_bytes, round_exchanges, update_bytes

P, A = 1_000_000, 10


def test_codec_sizes():
    base = update_bytes(P, A, "none")
    assert base == 4 * P + A * payload.ARRAY_OVERHEAD_BYTES
    assert update_bytes(P, A, "fp16") == 2 * P + A * payload.ARRAY_OVERHEAD_BYTES
    assert update_bytes(P, A, "int8") == P + (A + 1) * payload.ARRAY_OVERHEAD_BYTES + 4 * A  # + the scales array
    # top-k pays an index per value: 1 % keeps 10,000 values at 8 bytes each
    assert update_bytes(P, A, "topk", 0.01) == math.ceil(0.01 * P) * 8 + 2 * payload.ARRAY_OVERHEAD_BYTES  # idx, values


def test_plain_fedavg_is_one_exchange_of_float32():
    (ex,) = round_exchanges(P, A, 1)
    assert ex.stage == "fit" and ex.computes
    assert ex.bytes_up == pytest.approx(4 * P, rel=0.01)
    assert ex.bytes_down == ex.bytes_up


def test_stock_secagg_doubles_upload_and_later_downloads():
    plain = round_exchanges(P, A, 2)[0]
    stock1 = {e.stage: e for e in round_exchanges(P, A, 1, secagg="stock", num_neighbours=4)}
    stock2 = {e.stage: e for e in round_exchanges(P, A, 2, secagg="stock", num_neighbours=4)}
    assert list(stock1) == ["setup", "share_keys", "collect_masked_vectors", "unmask"]
    assert stock1["collect_masked_vectors"].bytes_up / plain.bytes_up == pytest.approx(2.0, rel=0.01)
    assert stock1["collect_masked_vectors"].bytes_down == pytest.approx(plain.bytes_down, rel=0.01)
    assert stock2["collect_masked_vectors"].bytes_down / plain.bytes_down == pytest.approx(2.0, rel=0.01)


def test_packed_secagg_keeps_float32_sizes():
    plain = round_exchanges(P, A, 2)[0]
    packed = {e.stage: e for e in round_exchanges(P, A, 2, secagg="packed", num_neighbours=4)}
    assert packed["collect_masked_vectors"].bytes_up / plain.bytes_up <= 1.02
    assert packed["collect_masked_vectors"].bytes_down / plain.bytes_down <= 1.02


def test_masked_value_width():
    assert masked_value_bytes("stock") == 8
    assert masked_value_bytes("packed", 2**32) == 4
    assert masked_value_bytes("packed", 2**16) == 2
    assert masked_value_bytes("packed", 2**40) == 8


def test_codecs_rejected_with_secagg():
    with pytest.raises(ValueError):
        round_exchanges(P, A, 1, secagg="stock", codec="fp16")
