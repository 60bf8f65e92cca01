"""``fedbw calibrate --from-messages``: an earlier calibration's measured messages fitted again, without
emulating; the measurements round-trip through their file."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fedbw.calibrate.fit import UNSHAPED
from fedbw.calibrate.measure import Measurements, messages_path, read_measurements, write_measurements
from fedbw.calibration.file import read_calibration
from fedbw.cli import app
from fedbw.netmodel.flower import MIB
from fedbw.results.messages import MeasuredMessage

HOP = (0.004, 0.02)  #: per object, per MiB
AGGREGATE = 0.003  #: per MiB of replies


def _measurements() -> Measurements:
    msgs = []
    for i, (objects, mib) in enumerate(((4, 0.1), (8, 0.5), (70, 45.0), (3, 4.0), (9, 32.0))):
        t = HOP[0] * objects + HOP[1] * mib
        msgs.append(MeasuredMessage(round=i + 1, client_id=0, stage="train", bytes_down=mib * MIB, bytes_up=mib * MIB,
                                    flower_bytes_down=mib * MIB, flower_bytes_up=mib * MIB, t_down_s=t, t_up_s=t,
                                    t_compute_s=0.0, t_framework_s=0.0, total_s=2 * t, parts={},
                                    objects_down=objects, objects_up=objects, run=UNSHAPED, model="m"))
    agg = [[float(k), float(mib), AGGREGATE * k * mib] for mib in (1, 16) for k in (2, 4)]
    return Measurements(msgs, agg, None, [1.5, 1.7, 1.6], 2.0, True, {"created_utc": "2026-12-04T23:00:00Z",
                                                                       "command": "fedbw calibrate --out old.toml"})


def test_measurements_round_trip(tmp_path: Path) -> None:
    m = _measurements()
    back = read_measurements(write_measurements(tmp_path / "x.messages.jsonl", m))
    assert back == m
    assert messages_path(tmp_path / "cal.toml") == tmp_path / "cal.messages.jsonl"


def test_from_messages_fits_again_without_emulating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fedbw.calibrate.measure as measure

    monkeypatch.setattr(measure, "measure", lambda **_: pytest.fail("emulated although --from-messages"))
    src = write_measurements(tmp_path / "old.messages.jsonl", _measurements())
    argv = ["calibrate", "--from-messages", str(src), "--out", str(tmp_path / "new.toml")]
    monkeypatch.setattr("sys.argv", ["fedbw", *argv])  # what the calibration records as its command
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0, res.output
    cal = read_calibration(tmp_path / "new.toml")
    fitted = [cal.constants[k].value for k in ("hop_object_s", "hop_s_per_mib")]
    assert fitted == pytest.approx(HOP, abs=1e-9)
    assert cal.constants["aggregate_s_per_mib"].value == pytest.approx(AGGREGATE)
    assert cal.constants["hop_s_per_mib"].interval is not None  # every fitted constant has its interval
    assert cal.provenance["host_reference_s"] == pytest.approx(1.6) and cal.provenance["dilation"] == 2.0
    assert "--from-messages" in cal.provenance["command"]
    assert cal.provenance["created_utc"] == "2026-12-04T23:00:00Z"  # when measured, not when refitted
    assert cal.provenance["measured_by"] == "fedbw calibrate --out old.toml"  # how it was measured, kept


def test_a_damaged_messages_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.messages.jsonl"
    bad.write_text('{"schema": "fedbw.measured-messages", "schema_version": 1}\n')
    res = CliRunner().invoke(app, ["calibrate", "--from-messages", str(bad), "--out", str(tmp_path / "c.toml")])
    assert res.exit_code == 2 and "the head lacks what the fit needs" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "c.toml").exists()


def test_measure_secagg_times_the_crypto_again_and_needs_from_messages(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A calibration whose SecAgg+ constants are of an earlier form is refused with the command that measures
    them again; that command keeps the messages' fit and replaces only the crypto."""
    import dataclasses

    import fedbw.fl.privacy.costs as costs
    from fedbw.netmodel.secagg_cost import SecAggCostConstants

    fresh = SecAggCostConstants(**{f.name: 0.5 for f in dataclasses.fields(SecAggCostConstants)
                                   if f.type in ("float", float)})
    monkeypatch.setattr(costs, "measure_secagg_costs", lambda **_: fresh)
    old = _measurements()
    old.secagg = {**fresh.to_json(), "combine_seed_s": 0.001, "combine_key_s": 0.01}
    src = write_measurements(tmp_path / "old.messages.jsonl", old)
    refused = CliRunner().invoke(app, ["calibrate", "--from-messages", str(src), "--out", str(tmp_path / "a.toml")])
    assert refused.exit_code == 2 and "--measure-secagg" in refused.output and "Traceback" not in refused.output
    alone = CliRunner().invoke(app, ["calibrate", "--measure-secagg", "--out", str(tmp_path / "b.toml")])
    assert alone.exit_code == 2 and "--from-messages" in alone.output
    res = CliRunner().invoke(app, ["calibrate", "--from-messages", str(src), "--measure-secagg",
                                   "--out", str(tmp_path / "c.toml")])
    assert res.exit_code == 0, res.output
    cal = read_calibration(tmp_path / "c.toml")
    assert cal.secagg == fresh
    assert cal.constants["hop_s_per_mib"].value == pytest.approx(HOP[1], abs=1e-9)
    (tmp_path / "old.toml").write_text((tmp_path / "c.toml").read_text().replace(
        "combine_key_per_share_s =", "combine_key_s ="))
    with pytest.raises(Exception, match="measure them again"):
        read_calibration(tmp_path / "old.toml")
