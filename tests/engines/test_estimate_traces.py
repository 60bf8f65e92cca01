"""Traced links in the plan and the model (issue 32.1): a config's trace reaches every client's link, a
trace that never moves gives the profile's rounds, a moving one moves them, and every bad input is one
clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedbw.config import config_from_dict
from fedbw.engines.estimate import estimate_round
from fedbw.errors import ConfigError
from fedbw.links import planned_links
from fedbw.plan import Plan, build_plan


def _cfg(tmp_path: Path, network: dict, **extra) -> dict:
    return {"name": "traced", "seed": 3, "model": {"name": "resnet18"}, "clients": {"total": 3, "per_round": 3,
            "compute": "synthetic", "device_profile": "desktop-gpu"}, "training": {"rounds": 3},
            "network": network, "output_dir": str(tmp_path), **extra}


def _rounds(plan: Plan) -> list[float]:
    clock = plan.deployment_clock()
    return [estimate_round(plan, r, clock=clock).round_time_s for r in range(1, plan.rounds + 1)]


def test_a_trace_that_never_moves_gives_the_profiles_rounds(tmp_path: Path) -> None:
    flat = tmp_path / "flat.csv"
    flat.write_text("t_s,up_mbps,down_mbps\n0,30,300\n7,30,300\n")  # home-30's rates, a 14 s loop
    plain = build_plan(config_from_dict(_cfg(tmp_path, {"profile": "home-30"})))
    # aligned: every client on one link object, as the plain plan's clients are (the clock groups them)
    traced = build_plan(config_from_dict(_cfg(tmp_path, {"profile": "home-30", "trace": str(flat),
                                                         "trace_phase": "aligned"})))
    assert traced.clients[0].access.profile == "home-30~flat"
    assert _rounds(traced) == pytest.approx(_rounds(plain), rel=1e-9)


def test_a_slower_stretch_of_the_trace_makes_the_rounds_it_falls_in_longer(tmp_path: Path) -> None:
    step = tmp_path / "step.csv"
    # home-30's rates for 300 s, then a tenth of the uplink for 300 s: round 1 sees the first part only
    step.write_text("t_s,up_mbps,down_mbps\n0,30,300\n300,3,300\n600,3,300\n")
    cfg = _cfg(tmp_path, {"profile": "home-30", "trace": str(step), "trace_phase": "aligned"})
    traced = _rounds(build_plan(config_from_dict(cfg)))
    plain = _rounds(build_plan(config_from_dict(_cfg(tmp_path, {"profile": "home-30"}))))
    assert traced[0] == pytest.approx(plain[0], rel=1e-9)  # round 1 ends well before 300 s
    cfg["training"]["rounds"] = 30
    many = _rounds(build_plan(config_from_dict(cfg)))
    assert max(many) > 5 * plain[0]  # a round in the slow stretch: the uplink a tenth, the upload ten times longer


def test_clients_start_at_seeded_points_of_the_trace_unless_aligned(tmp_path: Path) -> None:
    net = {"mix": [{"profile": "mobile-4g", "trace": "lte-short"}]}
    links = planned_links(config_from_dict(_cfg(tmp_path, net)))
    offsets = [link.trace_offset_s for link in links]
    assert len(set(offsets)) == 3 and all(0 <= o < 600 for o in offsets)
    assert offsets == [link.trace_offset_s for link in planned_links(config_from_dict(_cfg(tmp_path, net)))]
    aligned = planned_links(config_from_dict(_cfg(tmp_path, {**net, "trace_phase": "aligned"})))
    assert {link.trace_offset_s for link in aligned} == {0.0}
    assert links[0].rtt_ms == 50 and links[0].up_mbps == pytest.approx(5.9457, rel=1e-3)  # the trace's mean


def test_an_override_gives_one_client_a_trace_and_the_plan_file_keeps_it(tmp_path: Path) -> None:
    cfg = config_from_dict(_cfg(tmp_path, {"profile": "home-50", "overrides": [{"client": 1, "trace": "lte-driving"}]}))
    plan = build_plan(cfg)
    assert [c.access.trace is not None for c in plan.clients] == [False, True, False]
    again = Plan.from_json(json.loads(json.dumps(plan.to_json())))
    assert [c.access.model() for c in again.clients] == [c.access.model() for c in plan.clients]
    assert _rounds(again) == _rounds(plan)


@pytest.mark.parametrize("network, extra, says", [
    ({"profile": "home-30", "trace": "lte-shrot"}, {}, "lte-short"),
    ({"profile": "home-30", "overrides": [{"client": 0, "trace": "lte-short", "up_mbps": 3}]}, {}, "not both"),
    ({"profile": "home-30", "trace": "lte-short"}, {"framework": "none"}, "deployment clock"),
    ({"profile": "home-30", "trace": "missing-dir/x.csv"}, {}, "cannot read it"),
])
def test_bad_trace_settings_are_one_clear_error(tmp_path: Path, network: dict, extra: dict, says: str) -> None:
    from fedbw.config.loading import check_catalog_names

    with pytest.raises((ConfigError, ValueError), match=says):
        cfg = config_from_dict(_cfg(tmp_path, network, **extra))
        check_catalog_names(cfg, "test")
        build_plan(cfg)
