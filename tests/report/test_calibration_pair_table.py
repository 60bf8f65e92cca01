"""docs/fidelity.md's tables that set two calibration files side by side (fedbw/report/calibration_pair_table.py)."""

from __future__ import annotations

from pathlib import Path

import fedbw.calibration.file as calibration_file
from fedbw.calibration.file import Calibration, Constant, write_calibration
from fedbw.report.calibration_pair_table import VALIDATION_CALIBRATION, calibration_dilations_markdown


def test_the_validation_calibration_is_set_beside_the_shipped_one_constant_by_constant(tmp_path: Path,
                                                                                        monkeypatch) -> None:
    assert "no data yet" in calibration_dilations_markdown(tmp_path)
    shipped = Calibration({"request_s": Constant(0.010, interval=(0.009, 0.011)),
                           "clientapp_start_s": Constant(0.50, interval=(0.45, 0.55))},
                          {"created_utc": "then", "dilation": 2.0}, "shipped.toml")
    monkeypatch.setattr(calibration_file, "default_calibration", lambda: shipped)
    path = tmp_path / VALIDATION_CALIBRATION
    path.parent.mkdir(parents=True)
    write_calibration(path, Calibration({"request_s": Constant(0.0105, interval=(0.010, 0.012)),
                                         "clientapp_start_s": Constant(0.65, interval=(0.60, 0.70))},
                                        {"created_utc": "now", "dilation": 7.0}))
    text = calibration_dilations_markdown(tmp_path)
    lines = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in text.splitlines()
             if line.startswith("| ") and "constant" not in line}
    assert lines["request_s"][4:] == ["1.05", "no"]  # the intervals overlap
    assert lines["clientapp_start_s"][4:] == ["1.30", "yes"]  # 0.45–0.55 against 0.60–0.70
    assert "dilation 2" in text and "dilation 7" in text


def test_two_hosts_calibrations_side_by_side_name_their_cpus_and_ratios() -> None:
    """docs/fidelity.md's "The host changed": the shipped (Xeon) file beside the AMD host's, from the files."""
    from fedbw.calibration.file import default_calibration, read_calibration
    from fedbw.report.calibration_pair_table import OTHER_HOST_CALIBRATION, calibration_hosts_markdown

    root = Path(__file__).resolve().parents[2]
    text = calibration_hosts_markdown(root)
    shipped, amd = default_calibration(), read_calibration(root / OTHER_HOST_CALIBRATION)
    ratio = amd.constants["clientapp_start_s"].value / shipped.constants["clientapp_start_s"].value
    assert "| clientapp_start_s |" in text and f"| {ratio:.2f} | yes |" in text
    assert "Intel(R) Xeon(R) Processor" in text and "AMD EPYC" in text
    assert calibration_hosts_markdown(Path("/nonexistent")).startswith("(no data yet")


def test_validation_5s_calibration_is_set_beside_validation_4s_not_the_shipped_one(tmp_path: Path) -> None:
    """Both grids' calibrations were measured at dilation 7 on different CPUs: the table compares those two
    files, and says which is missing until both are there."""
    from fedbw.report.calibration_pair_table import VALIDATION_5_CALIBRATION, calibration_validation_5_markdown

    xeon = tmp_path / VALIDATION_CALIBRATION
    xeon.parent.mkdir(parents=True)
    write_calibration(xeon, Calibration({"hop_object_s": Constant(0.004, interval=(0.0035, 0.0045))},
                                        {"created_utc": "then", "dilation": 7.0, "cpu": "Intel(R) Xeon(R) Processor"}))
    assert VALIDATION_5_CALIBRATION in calibration_validation_5_markdown(tmp_path)  # no data yet: names the file
    write_calibration(tmp_path / VALIDATION_5_CALIBRATION,
                      Calibration({"hop_object_s": Constant(0.008, interval=(0.007, 0.009))},
                                  {"created_utc": "now", "dilation": 7.0, "cpu": "AMD EPYC"}))
    text = calibration_validation_5_markdown(tmp_path)
    row = next(line for line in text.splitlines() if line.startswith("| hop_object_s |"))
    assert [c.strip() for c in row.split("|")[1:-1]][-2:] == ["2.00", "yes"]
    assert "validation 4's (Xeon)" in text and "Intel(R) Xeon(R) Processor" in text and "AMD EPYC" in text
    assert "Shipped" not in text  # the base is validation 4's file, not the catalog's
