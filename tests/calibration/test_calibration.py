"""Calibration files round-trip, feed the model and the plan, and fail clearly."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fedbw.calibration.file import (HOST_REFERENCE, Calibration, Constant, at_host_speed, default_calibration, load_costs,
                                   read_calibration, write_calibration)
from fedbw.errors import ConfigError
from fedbw.netmodel.flower import FlowerCosts

def test_a_calibration_file_round_trips_and_feeds_the_model(tmp_path: Path) -> None:
    cal = Calibration({"clientapp_start_s": Constant(2.5, 0.1, 9, "by hand"), "local_s_per_mib": Constant(0.01, 0, 3, "x")},
                      {"created_utc": "now", "machine": "test"})
    path = write_calibration(tmp_path / "cal.toml", cal)
    back = read_calibration(path)
    assert back.constants["clientapp_start_s"].value == 2.5 and back.provenance["machine"] == "test"
    costs = load_costs(str(path))
    assert costs.clientapp_start_s == 2.5 and costs.local_s_per_mib == 0.01
    assert costs.request_s == FlowerCosts().request_s  # a constant the file lacks keeps its default


def test_secagg_constants_travel_in_the_file_and_the_plan(tmp_path: Path) -> None:
    from fedbw.config import config_from_dict
    from fedbw.plan import Plan, build_plan

    crypto = default_calibration().secagg
    assert crypto is not None
    cal = Calibration({"request_s": Constant(0.01)}, {"created_utc": "now"}, secagg=crypto)
    path = write_calibration(tmp_path / "cal.toml", cal)
    assert read_calibration(path).secagg == crypto
    cfg = config_from_dict({"engine": "estimate", "clients": {"total": 4, "per_round": 4, "compute": "synthetic"},
                            "privacy": {"secagg": {"enabled": True, "num_shares": 3}},
                            "deployment": {"calibration": str(path)}})
    plan = build_plan(cfg)
    extra = {ex.stage: ex.client_extra_s for ex in plan.predicted_exchanges(1)}
    assert extra["share_keys"] > 0 and extra["collect_masked_vectors"] > extra["setup"] > 0
    assert plan.timeline_options()["server_extra_s"]("unmask", 4) > 0
    assert Plan.from_json(plan.to_json()).costs == plan.costs  # the apps read the same costs
    (tmp_path / "bad.toml").write_text("[calibration]\nschema = \"fedbw.calibration\"\nschema_version = 2\n[secagg]\nkeygen_s = -1\n")
    with pytest.raises(ConfigError, match=r"\[secagg\] must hold"):
        read_calibration(tmp_path / "bad.toml")


def test_bad_calibration_files_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found; write one with `fedbw calibrate"):
        read_calibration(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("this is = = not toml")
    with pytest.raises(ConfigError, match="not a TOML calibration file"):
        read_calibration(tmp_path / "bad.toml")
    (tmp_path / "unknown.toml").write_text("[calibration]\nschema = \"fedbw.calibration\"\nschema_version = 2\n[constants.warp_speed]\nvalue = 9\n")
    with pytest.raises(ConfigError, match="unknown constant"):
        read_calibration(tmp_path / "unknown.toml")
    (tmp_path / "neg.toml").write_text("[calibration]\nschema = \"fedbw.calibration\"\nschema_version = 2\n[constants.request_s]\nvalue = -1\n")
    with pytest.raises(ConfigError, match="must be a number >= 0"):
        read_calibration(tmp_path / "neg.toml")


def test_the_shipped_default_is_a_real_calibration_of_every_fitted_constant() -> None:
    cal = default_calibration()
    assert cal.provenance.get("created_utc") not in (None, "provisional")
    from fedbw.netmodel.flower_costs import FLOWER_SETTINGS

    cpu = {f.name for f in dataclasses.fields(FlowerCosts)} - FLOWER_SETTINGS - {
        "intervals"}  # the constants' uncertainty, read from each constant's interval
    assert cpu - {"secagg"} <= set(cal.constants), f"not calibrated: {sorted(cpu - {'secagg'} - set(cal.constants))}"
    assert cal.secagg is not None and cal.costs().secagg == cal.secagg  # SecAgg+'s crypto, for its stages
    assert cal.provenance.get(HOST_REFERENCE, 0) > 0  # the host's speed then: comparisons rescale from it
    # every fitted constant carries its bootstrap interval: the model's round intervals draw from them
    assert all(c.interval is not None for c in cal.constants.values()), \
        [k for k, c in cal.constants.items() if c.interval is None]


def test_a_calibration_rescaled_to_the_host_speed_now(tmp_path: Path) -> None:
    """A host whose reference ClientApp load takes 1.5× as long now gets every CPU constant and SecAgg+
    primitive 1.5× as long; the provenance says by how much and from what."""
    crypto = default_calibration().secagg
    assert crypto is not None
    cal = Calibration({"clientapp_start_s": Constant(2.0, 0.1, 9, "by hand"), "request_s": Constant(0.01)},
                      {"created_utc": "then", HOST_REFERENCE: 1.2}, "cal.toml", secagg=crypto)
    slow = at_host_speed(cal, 1.8)
    assert slow.constants["clientapp_start_s"].value == pytest.approx(3.0)
    assert slow.constants["clientapp_start_s"].spread == 0.1 and slow.constants["request_s"].value == pytest.approx(0.015)
    counted = Calibration({"download_round_trips": Constant(2.0)}, {HOST_REFERENCE: 1.2}, "cal.toml")
    assert at_host_speed(counted, 1.8).constants["download_round_trips"].value == 2.0  # a count, not CPU time
    assert slow.secagg is not None and slow.secagg.ecdh_s == pytest.approx(1.5 * crypto.ecdh_s)
    assert slow.provenance["rescaled_by"] == pytest.approx(1.5) and slow.provenance[HOST_REFERENCE] == 1.8
    back = read_calibration(write_calibration(tmp_path / "slow.toml", slow))  # a file the model reads
    assert back.costs().clientapp_start_s == pytest.approx(3.0)
    with pytest.raises(ConfigError, match="no host reference"):
        at_host_speed(Calibration({}, {"created_utc": "old"}), 1.0)


def test_a_calibration_that_cannot_be_written_leaves_the_earlier_file_whole(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """write_calibration writes a temporary file and renames it over the target: when that fails (a full
    disk), the earlier file is still there byte for byte, no temporary is left, and the error names the file."""
    import errno
    import os

    import fedbw.files.atomic as atomic
    from fedbw.errors import FedbwError

    def full(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    target = tmp_path / "cal.toml"
    target.write_text("# earlier\n", encoding="utf-8")
    monkeypatch.setattr(atomic.os, "replace", full)
    with pytest.raises(FedbwError, match="cal.toml"):
        write_calibration(target, Calibration({"request_s": Constant(0.01)}, {"created_utc": "now"}))
    monkeypatch.setattr(atomic.os, "replace", os.replace)
    assert target.read_text(encoding="utf-8") == "# earlier\n"
    assert [p.name for p in tmp_path.iterdir()] == ["cal.toml"]


def test_download_round_trips_lengthen_downloads_only_by_that_many_round_trips() -> None:
    from fedbw.netmodel.flower import DeploymentClock
    from fedbw.netmodel.stage import StageMessage
    from fedbw.netmodel.transfer import ClientLink

    link = ClientLink(30.0, 300.0, 0.04)
    msg = [StageMessage(0, 4e6, 4e6, 9, 9, compute_s=0.5)]
    base = DeploymentClock(FlowerCosts()).run_stage("fit", msg, {0: link}).messages[0]
    more = DeploymentClock(dataclasses.replace(FlowerCosts(), download_round_trips=5.0)).run_stage(
        "fit", msg, {0: link}).messages[0]
    assert more.t_down_s == pytest.approx(base.t_down_s + 5 * 0.04)
    assert more.t_up_s == pytest.approx(base.t_up_s, abs=0.5)  # the upload's content waits may move a step


def test_a_file_naming_a_retired_constant_reads_as_written_and_sets_it_aside(tmp_path: Path) -> None:
    from fedbw.calibration.file import RETIRED

    path = tmp_path / "old.toml"
    path.write_text('[calibration]\nschema = "fedbw.calibration"\nschema_version = 2\n'
                    "[constants.hop_message_s]\nvalue = 0.044\n[constants.hop_object_s]\nvalue = 0.004\n")
    cal = read_calibration(path)
    assert cal.retired == {"hop_message_s": 0.044} and set(cal.constants) == {"hop_object_s"}
    assert cal.costs().hop_object_s == 0.004 and not hasattr(cal.costs(), "hop_message_s")
    assert set(RETIRED) >= {"server_share", "hop_message_s", "aggregate_base_s", "node_download_share"}
    # the shipped file was fitted after they retired: it names none of them (the old one is in git history)
    assert not default_calibration().retired


def test_a_calibrations_cpu_is_its_provenances_else_its_cryptos() -> None:
    from fedbw.netmodel.secagg_cost import SecAggCostConstants

    crypto = SecAggCostConstants(**{f: 0.0 for f in SecAggCostConstants.__dataclass_fields__ if f != "machine"},
                                 machine="Intel(R) Xeon(R) Processor, 2 CPU(s)")
    assert Calibration({}, {"cpu": "AMD EPYC"}, secagg=crypto).cpu == "AMD EPYC"
    assert Calibration({}, {}, secagg=crypto).cpu == "Intel(R) Xeon(R) Processor"
    assert Calibration({}, {}).cpu is None
