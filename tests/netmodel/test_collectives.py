import math

import pytest

from fedbw.netmodel.collectives import allreduce, best_allreduce, busbw_from_algbw, hierarchical_allreduce


def test_ring_matches_alpha_beta_formula():
    # p = 8, n = 1 GB, busbw 50 GB/s (β = 2e-11 s/B), α = 5 µs
    e = allreduce(1e9, 8, 50, 5e-6, "ring")
    assert e.time_s == pytest.approx(2 * 7 * 5e-6 + 2 * 7 / 8 * 1e9 / 50e9)


def test_ring_busbw_equals_link_bandwidth_without_latency():
    e = allreduce(4e9, 16, 47, 0.0, "ring")
    assert e.busbw_gbps == pytest.approx(47)
    assert e.algbw_gbps == pytest.approx(47 * 16 / 30)


def test_recursive_doubling_and_rabenseifner():
    rd = allreduce(1e6, 8, 10, 1e-5, "recursive-doubling")
    assert rd.time_s == pytest.approx(3 * (1e-5 + 1e6 / 10e9))
    rab = allreduce(1e6, 8, 10, 1e-5, "rabenseifner")
    assert rab.time_s == pytest.approx(2 * 3 * 1e-5 + 2 * 7 / 8 * 1e6 / 10e9)


def test_gamma_term():
    e = allreduce(1e9, 4, 100, 0.0, "ring", gamma_s_per_byte=1e-12)
    assert e.time_s == pytest.approx(2 * 3 / 4 * 1e9 / 100e9 + 3 / 4 * 1e9 * 1e-12)


def test_nccl_tests_busbw_factor():
    assert busbw_from_algbw(10.0, 8) == pytest.approx(17.5)
    assert busbw_from_algbw(10.0, 2) == pytest.approx(10.0)


def test_best_picks_latency_optimal_for_small_and_bandwidth_optimal_for_large():
    assert best_allreduce(1e3, 64, 47, 6e-6).algorithm == "recursive-doubling"
    assert best_allreduce(1e10, 64, 47, 6e-6).algorithm in ("ring", "rabenseifner")


def test_traffic_per_rank_approaches_twice_the_model():
    e = allreduce(350e9, 1024, 47, 6e-6)
    assert e.bytes_per_rank / e.size_bytes == pytest.approx(2 * 1023 / 1024)


def test_hierarchical_grows_linearly_not_exponentially():
    kw = dict(gpus_per_node=8, intra_busbw_gbps=420, intra_alpha_s=3e-6, inter_busbw_gbps=47, inter_alpha_s=6e-6)
    times = [hierarchical_allreduce(1e9, nodes, **kw).time_s for nodes in (2, 4, 8, 16, 32)]
    steps = [b - a for a, b in zip(times, times[1:])]
    assert all(s >= 0 for s in steps)
    # bandwidth part saturates at 2·(n/g)/busbw; doubling nodes never doubles time
    assert all(b / a < 1.5 for a, b in zip(times, times[1:]))
    assert hierarchical_allreduce(1e9, 1, **kw).time_s < times[0]


def test_single_rank_is_free_and_bad_inputs_rejected():
    assert allreduce(1e9, 1, 10, 1e-6).time_s == 0
    assert math.isinf(allreduce(1e9, 1, 10, 1e-6).algbw_gbps)
    with pytest.raises(ValueError):
        allreduce(1e9, 8, 0, 1e-6)
    with pytest.raises(ValueError):
        allreduce(1e9, 8, 10, 1e-6, "butterfly")
