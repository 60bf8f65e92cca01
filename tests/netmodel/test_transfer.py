import math

import pytest

from fedbw.netmodel.transfer import serialization_time_s, transfer_time_s


def test_serialization_matches_hand_computation():
    # 100 MB at 30 Mbps: 8e8 bit / 3e7 bit/s = 26.666… s
    assert serialization_time_s(100e6, 30) == pytest.approx(800 / 30)


def test_transfer_adds_latency_and_round_trips():
    # 1 MB at 8 Mbps = 1 s, plus 10 ms one way, plus 2 RTTs of 40 ms
    assert transfer_time_s(1e6, 8, 0.010, extra_round_trips=2, rtt_s=0.040) == pytest.approx(1.0 + 0.010 + 0.080)


def test_halving_bandwidth_doubles_serialization_only():
    full = transfer_time_s(50e6, 50, 0.02)
    half = transfer_time_s(50e6, 25, 0.02)
    assert (half - 0.02) == pytest.approx(2 * (full - 0.02))


def test_zero_rate_is_infinite_and_zero_bytes_is_free():
    assert math.isinf(serialization_time_s(1, 0))
    assert serialization_time_s(0, 0) == 0.0


@pytest.mark.parametrize("args", [(-1, 10), (1, -10)])
def test_negative_inputs_rejected(args):
    with pytest.raises(ValueError):
        serialization_time_s(*args)
