from collections import Counter

import pytest

from fedbw.config import config_from_dict
from fedbw.plan import assign_profiles, build_plan


def test_profile_shares_use_largest_remainder():
    cfg = config_from_dict({"clients": {"total": 10, "per_round": 5}, "network": {"mix": [
        {"profile": "home-30", "share": 1}, {"profile": "home-50", "share": 1}, {"profile": "home-80", "share": 1}]}})
    counts = Counter(assign_profiles(cfg))
    assert sorted(counts.values()) == [3, 3, 4] and sum(counts.values()) == 10


def test_sampling_is_seeded_and_without_replacement():
    cfg = config_from_dict({"clients": {"total": 20, "per_round": 7}, "seed": 3})
    a, b = build_plan(cfg), build_plan(cfg)
    for r in (1, 2, 3):
        assert a.sampled_clients(r) == b.sampled_clients(r)
        assert len(set(a.sampled_clients(r))) == 7
    other = build_plan(config_from_dict({"clients": {"total": 20, "per_round": 7}, "seed": 4}))
    assert any(a.sampled_clients(r) != other.sampled_clients(r) for r in (1, 2, 3))


def test_overrides_change_one_client():
    cfg = config_from_dict({"clients": {"total": 4, "per_round": 2},
                            "network": {"profile": "home-30", "overrides": [{"client": 2, "up_mbps": 5}]}})
    plan = build_plan(cfg)
    assert plan.clients[2].up_mbps == 5 and plan.clients[2].profile == "home-30*"
    assert plan.clients[1].up_mbps == 30
    assert plan.clients[2].link.up_payload_mbps == pytest.approx(5 * 1448 / 1514)


def test_compute_estimate_from_device_profile():
    cfg = config_from_dict({"engine": "estimate", "model": {"name": "resnet50"},
                            "data": {"samples_per_client": 100}, "clients": {"device_profile": "desktop-gpu"}})
    plan = build_plan(cfg)
    assert plan.clients[0].est_compute_s == pytest.approx(100 * 3 * 8_178_368_512 / 10e12)


def test_digits_split_evenly():
    plan = build_plan(config_from_dict({"clients": {"total": 10, "per_round": 5}}))
    assert plan.clients[0].num_samples == int(1797 * 0.8) // 10
