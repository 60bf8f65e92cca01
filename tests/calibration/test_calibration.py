"""`fedbw calibrate`'s fits recover known constants, and calibration files round-trip or fail clearly."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fedbw.calibration.file import (HOST_REFERENCE, Calibration, Constant, at_host_speed, default_calibration, load_costs,
                                   read_calibration, write_calibration)
from fedbw.calibration.measure import fit_hops, fit_node_share, fit_process, nonnegative_lstsq
from fedbw.errors import ConfigError
from fedbw.netmodel.flower import MIB, FlowerCosts


def test_hop_fit_recovers_per_message_object_and_mib_costs() -> None:
    truth = (0.03, 0.004, 0.02)
    messages = []
    for objects, mib in ((4, 0.1), (8, 0.5), (70, 45.0), (3, 4.0), (9, 32.0)):
        t = truth[0] + truth[1] * objects + truth[2] * mib
        messages.append({"objects_down": objects, "objects_up": objects, "flower_bytes_down": mib * MIB,
                         "flower_bytes_up": mib * MIB, "t_down_s": t, "t_up_s": t})
    fit = fit_hops(messages)
    assert [fit[k].value for k in ("hop_message_s", "hop_object_s", "hop_s_per_mib")] == pytest.approx(truth, abs=1e-9)


def test_process_fit_separates_the_start_the_fixed_work_and_the_local_pull() -> None:
    costs = FlowerCosts()
    messages = []
    for i, mib in enumerate((0.1, 0.5, 45.0) * 4):
        start = 1.4 + costs.superexec_poll_s / 2
        messages.append({"model": "m", "client_id": 0, "process_start_s": start, "flower_bytes_down": mib * MIB,
                         "objects_down": 5, "parts": {"clientapp_start_s": start + 0.8 + 0.004 * mib},
                         "t_receiving_s": 10.0 * i, "t_sent_s": 10.0 * i + 6.98})
    fit = fit_process(messages, costs)
    assert fit["clientapp_start_s"].value == pytest.approx(1.4)
    assert fit["clientapp_other_s"].value == pytest.approx(0.8)
    assert fit["local_s_per_mib"].value == pytest.approx(0.004)
    assert fit["request_s"].value == pytest.approx(0.02)  # 10 − 6.98 − the 3 s sleep
    assert all(type(c.value) is float for c in fit.values())  # plain floats: the file is TOML


def test_process_fit_counts_the_start_from_the_pull_when_the_process_starts_during_the_download() -> None:
    """A large message: the SuperExec launches the ClientApp at "Receiving", before the objects are in, and
    the ClientApp's own pull then backs off until they are. Measured from "Received" (the old fit), such
    messages looked like fast starts and slow pulls; the fit must recover the same constants either way."""
    from fedbw.netmodel.flower import pull_behind

    costs = FlowerCosts()
    start, other, per_mib, objects = 1.4, 0.8, 0.004, 131
    launch = start + costs.superexec_poll_s / 2
    messages = []
    for i, (mib, download) in enumerate(((0.1, 0.05), (45.0, 3.0), (0.5, 0.1), (45.0, 6.0)) * 3):
        t_has = pull_behind(launch, 0.0, download, objects, costs)
        t_app = t_has + other + per_mib * mib
        messages.append({"model": "m", "client_id": 0, "launch_s": launch, "process_start_s": launch - download,
                         "flower_bytes_down": mib * MIB, "objects_down": objects,
                         "parts": {"clientapp_start_s": t_app - download}})
    fit = fit_process(messages, costs)
    assert fit["clientapp_start_s"].value == pytest.approx(start)
    assert fit["clientapp_other_s"].value == pytest.approx(other)
    assert fit["local_s_per_mib"].value == pytest.approx(per_mib)


def test_node_share_fit_recovers_the_share_of_the_download_cpu_that_delays_the_clientapp() -> None:
    """Shaped messages laid out by the model with a known share; messages whose download ended before
    the launch carry no information and are left out."""
    from fedbw.netmodel.contention import node_cpu_during_download_s
    from fedbw.netmodel.flower import pull_behind

    costs = dataclasses.replace(FlowerCosts(), hop_object_s=0.008, hop_s_per_mib=0.0065, local_s_per_mib=0.008)
    truth = dataclasses.replace(costs, node_download_share=0.45)
    launch, objects, mib = costs.clientapp_start_s + costs.superexec_poll_s / 2, 131, 44.6
    messages = []
    for download in (3.0, 3.6, 4.2, 0.5):
        delay = node_cpu_during_download_s(truth.node_download_share, truth.hop_cpu_s(objects, mib * MIB), 0.0,
                                           download, launch - costs.clientapp_start_s)
        t_app = (pull_behind(launch, 0.0, download, objects, costs) + costs.local_cpu_s(mib * MIB) + delay
                 + costs.clientapp_other_s)
        messages.append({"launch_s": launch, "process_start_s": launch - download, "objects_down": objects,
                         "flower_bytes_down": mib * MIB, "parts": {"clientapp_start_s": t_app - download}})
    fit = fit_node_share(messages, costs)["node_download_share"]
    assert fit.value == pytest.approx(0.45) and fit.samples == 3
    assert fit_node_share(messages[3:], costs) == {}  # no overlap: nothing to fit


def test_nonnegative_least_squares_drops_a_column_that_goes_negative() -> None:
    import numpy as np

    a = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
    assert nonnegative_lstsq(a, np.array([3.0, 2.0, 1.0])).tolist() == pytest.approx([2.0, 0.0])


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
    (tmp_path / "bad.toml").write_text("[calibration]\nschema_version = 1\n[secagg]\nkeygen_s = -1\n")
    with pytest.raises(ConfigError, match=r"\[secagg\] must hold"):
        read_calibration(tmp_path / "bad.toml")


def test_bad_calibration_files_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found; write one with `fedbw calibrate"):
        read_calibration(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("this is = = not toml")
    with pytest.raises(ConfigError, match="not a TOML calibration file"):
        read_calibration(tmp_path / "bad.toml")
    (tmp_path / "unknown.toml").write_text("[calibration]\nschema_version = 1\n[constants.warp_speed]\nvalue = 9\n")
    with pytest.raises(ConfigError, match="unknown constant"):
        read_calibration(tmp_path / "unknown.toml")
    (tmp_path / "neg.toml").write_text("[calibration]\nschema_version = 1\n[constants.request_s]\nvalue = -1\n")
    with pytest.raises(ConfigError, match="must be a number >= 0"):
        read_calibration(tmp_path / "neg.toml")


def test_the_shipped_default_is_a_real_calibration_of_every_fitted_constant() -> None:
    cal = default_calibration()
    assert cal.provenance.get("created_utc") not in (None, "provisional")
    cpu = {f.name for f in dataclasses.fields(FlowerCosts)} - {
        "supernode_idle_poll_s", "superexec_poll_s", "reply_poll_s", "serverapp_poll_s", "backoff_first_s",
        "backoff_cap_s", "object_workers", "content_wait_s"}  # Flower's own intervals: not measured
    assert cpu - {"secagg"} <= set(cal.constants), f"not calibrated: {sorted(cpu - {'secagg'} - set(cal.constants))}"
    assert cal.secagg is not None and cal.costs().secagg == cal.secagg  # SecAgg+'s crypto, for its stages
    assert cal.provenance.get(HOST_REFERENCE, 0) > 0  # the host's speed then: comparisons rescale from it


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
    shared = Calibration({"node_download_share": Constant(0.4)}, {HOST_REFERENCE: 1.2}, "cal.toml")
    assert at_host_speed(shared, 1.8).constants["node_download_share"].value == 0.4  # a share, not CPU time
    assert slow.secagg is not None and slow.secagg.ecdh_s == pytest.approx(1.5 * crypto.ecdh_s)
    assert slow.provenance["rescaled_by"] == pytest.approx(1.5) and slow.provenance[HOST_REFERENCE] == 1.8
    back = read_calibration(write_calibration(tmp_path / "slow.toml", slow))  # a file the model reads
    assert back.costs().clientapp_start_s == pytest.approx(3.0)
    with pytest.raises(ConfigError, match="no host reference"):
        at_host_speed(Calibration({}, {"created_utc": "old"}), 1.0)


def test_calibrate_interrupted_writes_nothing_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during the measurement: exit 130, a line saying no calibration was written (not the run
    commands' "finished rounds are kept"), and a file already at --out left byte for byte."""
    from typer.testing import CliRunner

    import fedbw.calibration.measure as measure
    from fedbw.cli import app

    def interrupted(**_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(measure, "calibrate", interrupted)
    target = tmp_path / "cal.toml"
    target.write_text("# earlier\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["calibrate", "--out", str(target)])
    assert res.exit_code == 130, res.output
    assert "no calibration written" in res.output and "rounds are kept" not in res.output
    assert target.read_text(encoding="utf-8") == "# earlier\n"


def test_a_calibration_that_cannot_be_written_leaves_the_earlier_file_whole(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """write_calibration writes a temporary file and renames it over the target: when that fails (a full
    disk), the earlier file is still there byte for byte, no temporary is left, and the error names the file."""
    import errno
    import os

    import fedbw.results.atomic as atomic
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


def test_concurrency_counts_the_other_clients_transfers_by_their_overlap() -> None:
    from fedbw.calibration.server_share import concurrency, transfer_windows

    msgs = [{"client_id": 0, "t_receiving_s": 10.0, "t_down_s": 4.0, "t_sent_s": 30.0, "t_up_s": 10.0},
            {"client_id": 1, "t_receiving_s": 12.0, "t_down_s": 4.0, "t_sent_s": 40.0, "t_up_s": 5.0},
            {"client_id": 0, "t_receiving_s": None, "t_down_s": 1.0, "t_sent_s": 50.0, "t_up_s": 1.0}]
    windows = transfer_windows(msgs)
    assert windows[:2] == [(0, "down", 10.0, 14.0), (0, "up", 20.0, 30.0)] and windows[4] is None
    n = concurrency(windows)
    assert n[0] == n[2] == pytest.approx(1.5)  # half of each download overlaps the other's
    assert n[1] == 1.0 and n[3] == 1.0  # the uploads do not meet; a client's own transfers never count
    assert n[4] is None


def test_server_share_fit_recovers_the_superlinks_part_of_the_object_cpu() -> None:
    """Four clients whose transfers overlap wholly, laid out by the model with a known share over a
    one-client run that carries the same fixed offset the model lacks (the fit uses growth only)."""
    from fedbw.calibration.server_share import fit_server_share
    from fedbw.netmodel.contention import hop_cpu_factor
    from fedbw.netmodel.objects import transfer_objects_s
    from fedbw.netmodel.transfer import ClientLink

    costs = dataclasses.replace(FlowerCosts(), hop_object_s=0.006, hop_s_per_mib=0.006)
    link = ClientLink(28.7, 287.0, 0.025)
    nbytes, objects, offset = 46.8e6, 131, 0.4

    def model(d: str, share: float, n: float) -> float:
        k = hop_cpu_factor(share, n)
        rate = link.down_bytes_per_s if d == "down" else link.up_bytes_per_s
        return transfer_objects_s(nbytes, objects, rate, link.rtt_s, 2, costs.hop_object_s * k,
                                  costs.hop_s_per_mib / MIB * k)

    def msg(cid: int, t0: float, share: float, n: float) -> dict:
        down, up = model("down", share, n) + offset, model("up", share, n) + offset
        return {"client_id": cid, "t_receiving_s": t0, "t_down_s": down, "t_sent_s": t0 + 20.0, "t_up_s": up,
                "flower_bytes_down": nbytes, "flower_bytes_up": nbytes, "objects_down": objects,
                "objects_up": objects}

    alone = [msg(0, 100.0 * r, 0.0, 1.0) for r in range(3)]
    together = [msg(c, 100.0 * r, 0.35, 4.0) for r in range(3) for c in range(4)]
    fit = fit_server_share(alone, together, costs, link)["server_share"]
    assert fit.value == pytest.approx(0.35, abs=0.005) and fit.samples == 24
    assert fit_server_share(alone, [msg(0, 0.0, 0.0, 1.0)], costs, link) == {}  # nothing overlapped


def test_download_round_trip_fit_recovers_the_requests_beyond_the_model() -> None:
    """Shaped downloads laid out by the model plus 6 round trips (one of them also met the push: +1.2 s);
    the median takes the six, and a link without round trips has nothing to fit."""
    from fedbw.calibration.measure import fit_download_round_trips
    from fedbw.netmodel.objects import transfer_objects_s
    from fedbw.netmodel.transfer import ClientLink

    costs = dataclasses.replace(FlowerCosts(), hop_object_s=0.006, hop_s_per_mib=0.006, hop_message_s=0.0)
    link = ClientLink(28.7, 287.0, 0.025)
    nbytes, objects = 46.8e6, 131
    model = 2 * link.rtt_s + transfer_objects_s(nbytes, objects, link.down_bytes_per_s, link.rtt_s, 2,
                                                costs.hop_object_s, costs.hop_s_per_mib / MIB)
    msgs = [{"objects_down": objects, "flower_bytes_down": nbytes, "t_down_s": model + 6 * link.rtt_s + extra}
            for extra in (0.0, 0.0, 0.0, 1.2)]
    fit = fit_download_round_trips(msgs, costs, link)["download_round_trips"]
    assert fit.value == pytest.approx(6.0) and fit.samples == 4
    assert fit_download_round_trips(msgs, costs, ClientLink(28.7, 287.0, 0.0)) == {}


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
