"""Profiles → links: one conversion for the model and the shaper, overrides, TCP efficiency."""

from collections import Counter
from dataclasses import replace

import pytest

from fedbw.config import config_from_dict
from fedbw.links import AccessLink, assign_profiles, planned_links, profile_link
from fedbw.plan import build_plan


def test_profile_shares_use_largest_remainder():
    cfg = config_from_dict({"clients": {"total": 10, "per_round": 5}, "network": {"mix": [
        {"profile": "home-30", "share": 1}, {"profile": "home-50", "share": 1}, {"profile": "home-80", "share": 1}]}})
    counts = Counter(m.profile for m in assign_profiles(cfg))
    assert sorted(counts.values()) == [3, 3, 4] and sum(counts.values()) == 10


def test_overrides_change_one_client():
    cfg = config_from_dict({"clients": {"total": 4, "per_round": 2},
                            "network": {"profile": "home-30", "overrides": [{"client": 2, "up_mbps": 5},
                                                                           {"client": 3, "profile": "home-80"}]}})
    links = planned_links(cfg)
    assert links[2].up_mbps == 5 and links[2].profile == "home-30*" and links[2].down_mbps == 300
    assert links[1].up_mbps == 30 and links[3] == profile_link("home-80")
    plan = build_plan(cfg)
    assert plan.clients[2].profile == "home-30*"
    assert plan.clients[2].link.up_payload_mbps == pytest.approx(5 * 1448 / 1514)


def test_model_and_shaper_get_the_same_numbers():
    link = profile_link("home-50")
    model, spec = link.model(), link.shaper_spec(seed=3)
    assert model.up_payload_mbps == spec.up_mbps == pytest.approx(50 * 1448 / 1514)
    assert model.down_payload_mbps == spec.down_mbps
    assert model.rtt_s * 1000 == spec.latency_up_ms + spec.latency_down_ms
    assert spec.jitter_up_ms == spec.jitter_down_ms == link.jitter_ms / 2 and spec.seed == 3


def test_the_profiles_tcp_efficiency_is_used_everywhere():
    link: AccessLink = replace(profile_link("home-30"), tcp_efficiency=0.5)
    assert link.model().up_payload_mbps == 15.0 and link.shaper_spec().up_mbps == 15.0
    assert link.shaper_spec(rate_factor=0.5).down_mbps == 75.0


def test_clients_of_one_profile_share_one_link_and_an_override_gets_its_own():
    cfg = config_from_dict({"clients": {"total": 6, "per_round": 2},
                            "network": {"profile": "home-30", "overrides": [{"client": 4, "rtt_ms": 80}]}})
    links = planned_links(cfg)
    assert all(links[i] is links[0] for i in (1, 2, 3, 5)) and links[4] is not links[0]
    assert links[0].model() is links[1].model()  # the model's link, made once per AccessLink
    assert links[4].model().rtt_s == 0.08 and links[0].model().rtt_s == profile_link("home-30").rtt_ms / 1000
    # replace() makes a new link with its own model link, never the cached one of the original
    faster = replace(links[0], up_mbps=300.0)
    assert faster.model().up_payload_mbps == pytest.approx(300 * 1448 / 1514) and faster == replace(faster)
    assert links[0] == profile_link("home-30")  # the cache is no field: equality is the profile's numbers


def test_stragglers_and_flaps_are_links_every_engine_sees() -> None:
    """[faults] stragglers and flaps are the plan's links (issue 32.1): the model's rates and traces carry them,
    so estimate times a straggler's upload at its slowed rate and a flap as an outage from the first round."""
    from fedbw.config import config_from_dict
    from fedbw.engines.estimate import run_estimate
    from fedbw.plan import build_plan

    base = {"engine": "estimate", "model": {"name": "resnet18"}, "clients": {"total": 3, "per_round": 3,
            "compute": "synthetic"}, "network": {"profile": "home-30"}, "training": {"rounds": 1}}
    plain = run_estimate(build_plan(config_from_dict(base)), "t")
    slowed = build_plan(config_from_dict({**base, "faults": {
        "stragglers": [{"client": 1, "link_factor": 0.5}],
        "flaps": [{"client": 2, "at_s": 0, "duration_s": 20, "direction": "up"}]}}))
    one = slowed.clients[1].link
    assert one.up_payload_mbps == pytest.approx(0.5 * slowed.clients[0].link.up_payload_mbps)
    assert slowed.clients[2].access.trace is not None and slowed.clients[2].access.trace.up.steps[:2] == (
        (0.0, 0.0), (20.0, 30.0))
    run = run_estimate(slowed, "t")
    up = {c.client_id: c.t_up_s for c in run.clients}
    base_up = {c.client_id: c.t_up_s for c in plain.clients}
    assert up[1] == pytest.approx(2 * base_up[1], rel=0.05)  # 46.8 MB at half the rate (+ its fixed costs)
    # client 2's uplink is down for the round's first 20 s: its upload, which starts after its download and
    # its training, waits for the rest of the outage
    assert up[2] > base_up[2] + 1.0 and {c.client_id: c.t_down_s for c in run.clients}[2] == pytest.approx(
        {c.client_id: c.t_down_s for c in plain.clients}[2], rel=0.01)
    assert run.rounds[0].round_time_s > plain.rounds[0].round_time_s


def test_flaps_that_overlap_or_sit_on_a_traced_link_are_config_errors() -> None:
    from fedbw.config import config_from_dict
    from fedbw.errors import ConfigError
    from fedbw.plan import build_plan

    base = {"engine": "estimate", "clients": {"total": 2, "per_round": 2}}
    with pytest.raises(ConfigError, match="overlap"):
        build_plan(config_from_dict({**base, "faults": {"flaps": [{"client": 0, "at_s": 1, "duration_s": 5},
                                                                  {"client": 0, "at_s": 3, "duration_s": 5}]}}))
    with pytest.raises(ConfigError, match="on a traced link"):
        build_plan(config_from_dict({**base, "network": {"trace": "lte-short"},
                                     "faults": {"flaps": [{"client": 0, "at_s": 1, "duration_s": 5}]}}))
