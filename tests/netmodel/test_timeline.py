import pytest

from fedbw.netmodel import ClientLink, MessageSizes, round_timeline


def test_barrier_slowest_client_decides_each_stage():
    fast = ClientLink(80, 800, 0.010)
    slow = ClientLink(8, 80, 0.050)
    ex = [MessageSizes("fit", 1e6, 1e6, True)]
    tl = round_timeline([(0, fast, 1.0), (1, slow, 2.0)], lambda cid: ex)
    # slow: down 0.025 + 1e6*8/80e6 = 0.125; compute 2.0; up 0.025 + 1.0 = 1.025 → 3.15
    assert tl.round_time_s == pytest.approx(0.125 + 2.0 + 1.025)
    assert tl.critical("fit").client_id == 1
    assert tl.comm_time_s == pytest.approx(0.125 + 1.025)
    assert tl.comm_fraction == pytest.approx((0.125 + 1.025) / 3.15)
    assert tl.bandwidth_bound


def test_stages_sum_and_compute_only_where_training():
    link = ClientLink(10, 100, 0.0)
    ex = [MessageSizes("setup", 0, 1000, False), MessageSizes("train", 0, 0, True)]
    tl = round_timeline([(0, link, 5.0)], lambda cid: ex)
    assert tl.stage_time_s("setup") == pytest.approx(1000 * 8 / 10e6)
    assert tl.stage_time_s("train") == pytest.approx(5.0)
    assert not tl.bandwidth_bound


def test_different_clients_can_lead_different_stages():
    a, b = ClientLink(10, 100, 0), ClientLink(100, 10, 0)
    ex = [MessageSizes("s1", 0, 1e6, False), MessageSizes("s2", 1e6, 0, False)]
    tl = round_timeline([(0, a, 0), (1, b, 0)], lambda cid: ex)
    assert tl.critical("s1").client_id == 0 and tl.critical("s2").client_id == 1
    assert tl.round_time_s == pytest.approx(0.8 + 0.8)


def test_empty_round():
    assert round_timeline([], lambda cid: []).round_time_s == 0
