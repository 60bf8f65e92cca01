"""benchmarks/cost_terms.py: one calibration's verdicts, and every committed calibration's side by side."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.benchmark_module import load_benchmark

from fedbw.report.cost_terms_table import cost_terms_across_markdown

C = load_benchmark("cost_terms")
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def test_across_takes_every_messages_file_oldest_first_with_its_host_and_dilation(tmp_path: Path, monkeypatch) -> None:
    # the AMD file records its CPU; the older Xeon file only names it through its SecAgg+ timings
    for name in ("calibration-dilation7-amd-epyc", "calibration-terms-4rounds"):
        shutil.copy(RESULTS / f"{name}.messages.jsonl", tmp_path)
    monkeypatch.setattr(C, "RESULTS", tmp_path)
    out = tmp_path / "across.json"
    assert C.main(["--across", "--resamples", "10", "--folds", "3", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    cals = data["calibrations"]
    assert [c["measured_utc"] for c in cals] == sorted(c["measured_utc"] for c in cals)
    assert [(c["cpu"], c["dilation"]) for c in cals] == [("Intel(R) Xeon(R) Processor", 2.0), ("AMD EPYC", 7.0)]
    assert {c["name"] for c in cals[0]["constants"]} >= {"download_round_trips", "request_s", "app_setup_s"}
    text = cost_terms_across_markdown(data)
    assert "| constant | 1: Xeon, K = 2 | 2: AMD EPYC, K = 7 | earns / unproven / goes |" in text
    row = next(line for line in text.splitlines() if line.startswith("| app_setup_s "))
    counts = [sum(c["verdict"] == v for cal in cals for c in cal["constants"] if c["name"] == "app_setup_s")
              for v in ("earns", "unproven", "goes")]
    assert row.endswith(" / ".join(map(str, counts)) + " |")
    hops = [c["hop_by_direction"] for c in cals]
    assert all(h[d]["transfers"] > 0 for h in hops for d in ("down", "up"))
    ratios = [f"×{h[d]['median_measured_over_predicted']:.2f}" for h in hops for d in ("down", "up")]
    assert f"1: {ratios[0]}, {ratios[1]}; 2: {ratios[2]}, {ratios[3]}." in text


def test_the_script_refuses_no_input_and_two_inputs(tmp_path: Path, monkeypatch, capsys) -> None:
    with pytest.raises(SystemExit):
        C.main([])
    with pytest.raises(SystemExit):
        C.main(["--across", "--messages", "x.jsonl"])
    monkeypatch.setattr(C, "RESULTS", tmp_path)  # no messages files
    assert C.main(["--across", "--out", str(tmp_path / "x.json")]) == 2
    assert "no calibration messages" in capsys.readouterr().err and not (tmp_path / "x.json").exists()
