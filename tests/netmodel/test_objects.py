"""Flower's objects on a link, a few requests at a time: hand-worked cases of the pipeline."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedbw.catalog import get_model
from fedbw.netmodel.objects import SMALL_OBJECT_BYTES, object_layout, pipelined_transfer_s, transfer_objects_s
from fedbw.netmodel.payload import ARRAY_CHUNK_BYTES, DOWN_OVERHEAD_OBJECTS, message_objects


def test_layout_follows_the_models_arrays_and_adds_up():
    spec = get_model("resnet18")
    nbytes = 4 * spec.params + 30_000
    n = message_objects(spec.num_arrays, nbytes, DOWN_OVERHEAD_OBJECTS)
    sizes = object_layout(nbytes, n, spec.array_shares)
    assert len(sizes) == n and sum(sizes) == pytest.approx(nbytes)
    assert max(sizes) <= ARRAY_CHUNK_BYTES
    # post-order: the first array (conv1, 9,408 values) is one chunk, then its own small object
    assert sizes[0] == pytest.approx(nbytes * 9_408 / spec.params, rel=0.01)
    assert sizes[1] == SMALL_OBJECT_BYTES


def test_layout_without_the_model_splits_evenly_or_uses_one_object():
    assert object_layout(1_000_000, 6) == pytest.approx((1_000_000 - 5 * 200, 200, 200, 200, 200, 200))
    even = object_layout(1_000_000, 8)  # two arrays: chunk, header, chunk, header, four records
    assert even[0] == even[2] and even[1] == even[3] == SMALL_OBJECT_BYTES and len(even) == 8
    assert object_layout(100, 4) == (25, 25, 25, 25)  # a tiny message: every object alike
    assert object_layout(0, 0) == ()


def test_round_trips_hide_behind_bulk_bytes_on_a_slow_link():
    """Two workers, 1 MB/s, RTT 0.1 s, no CPU. Objects: 1 MB, 10 B, 10 B, 1 MB. A's 1 MB body starts at
    0.1 s; B's two small objects take a round trip each (to ≈ 0.2 s), its 1 MB body starts at ≈ 0.3 s and
    shares the link with A's to the end. The link is busy from 0.1 s on: 0.1 + 2 MB / 1 MB/s = 2.1 s, where
    one request at a time pays all four round trips: 2.4 s."""
    t = pipelined_transfer_s((1e6, 10, 10, 1e6), 1e6, 0.1, 2, 0.0, 0.0)
    assert t == pytest.approx(2.1, abs=1e-4)
    # one worker: every round trip in series
    assert pipelined_transfer_s((1e6, 10, 10, 1e6), 1e6, 0.1, 1, 0.0, 0.0) == pytest.approx(4 * 0.1 + 2.0, abs=1e-4)


def test_cpu_is_one_queue_and_the_limit_is_the_calibration_sum():
    sizes = (5e6, 200.0, 3e6, 200.0, 200.0)
    per_obj, per_byte = 0.004, 1e-8
    cpu_sum = per_obj * len(sizes) + per_byte * sum(sizes)
    assert pipelined_transfer_s(sizes, 1e15, 0.0, 2, per_obj, per_byte) == pytest.approx(cpu_sum, rel=1e-6)
    # more workers cannot run the CPU faster
    assert pipelined_transfer_s(sizes, 1e15, 0.0, 8, per_obj, per_byte) == pytest.approx(cpu_sum, rel=1e-6)


def test_resnet18_upload_on_home_30_is_near_the_wire_and_its_download_pays_the_round_trips():
    """The shape measured under emulate (docs/methodology.md): at 28.7 Mbps up the round trips of ~138
    objects mostly hide behind bulk bytes; at 288 Mbps down about one round trip per pair shows."""
    spec = get_model("resnet18")
    nbytes = 4 * spec.params + 30_000
    n = message_objects(spec.num_arrays, nbytes, DOWN_OVERHEAD_OBJECTS)
    up_rate, down_rate, rtt = 28.69e6 / 8, 288e6 / 8, 0.025
    up = transfer_objects_s(nbytes, n, up_rate, rtt, 2, 0.0, 0.0, spec.array_shares)
    down = transfer_objects_s(nbytes, n, down_rate, rtt, 2, 0.0, 0.0, spec.array_shares)
    serial_rtts = rtt * math.ceil(n / 2)
    assert nbytes / up_rate < up < nbytes / up_rate + 0.4 * serial_rtts
    assert nbytes / down_rate + 0.6 * serial_rtts < down < nbytes / down_rate + serial_rtts


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.floats(1, 1e7), min_size=1, max_size=40), rate=st.floats(1e4, 1e10),
       rtt=st.floats(0, 0.2), workers=st.integers(1, 4), per_obj=st.floats(0, 0.01))
def test_bounds(sizes, rate, rtt, workers, per_obj):
    """Never faster than the wire or the CPU queue, never slower than everything in series."""
    sizes_t = tuple(sizes)
    t = pipelined_transfer_s(sizes_t, rate, rtt, workers, per_obj, 0.0)
    wire = sum(sizes) / rate
    series = wire + len(sizes) * (rtt + per_obj)
    assert max(wire, per_obj * len(sizes)) - 1e-9 <= t <= series * (1 + 1e-9) + 1e-9
    assert pipelined_transfer_s(sizes_t, rate, rtt, 1, per_obj, 0.0) == pytest.approx(series, rel=1e-6)
