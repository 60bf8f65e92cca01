"""benchmarks/in_sample.py: each validation's rows timed again under the calibration that validation froze
— found by its fingerprint, else by the time its run was measured (a file since refitted in the current
form) — and its estimate the same as the validation recorded when the model has not changed since."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchmark_module import load_benchmark

S = load_benchmark("in_sample")
ROOT = Path(__file__).resolve().parents[2]


def test_a_validations_calibration_is_found_by_fingerprint_else_by_when_it_was_measured() -> None:
    path, how = S.frozen_calibration(4, "c-3fcff1b96eb9")
    assert path == "benchmarks/results/calibration-dilation7.toml" and how == "the frozen calibration"
    # validation 2 froze the catalog's file of 2026-12-05 04:11 UTC, whose crypto was timed again since
    path, how = S.frozen_calibration(2, "c-5cec2fc6b8d6")
    assert path is not None and "current form" in how
    assert S.frozen_calibration(99, "c-nowhere")[0] is None


def test_an_estimate_under_a_validations_calibration_is_the_engines_steady_mean() -> None:
    """The row's steady mean is the estimate engine's: the same figure run_estimate gives for that config."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import validate as V

    from fedbw.config import config_from_dict
    from fedbw.engines.estimate import run_estimate
    from fedbw.plan import build_plan

    row, cal = "mlp-home-80-2", "benchmarks/results/calibration-dilation7.toml"
    cfg = {**V.row_config(*V.ROWS[row]), "engine": "estimate", "output_dir": "/tmp/fedbw-in-sample-test",
           "deployment": {"calibration": str(ROOT / cal)}}
    rounds = run_estimate(build_plan(config_from_dict(cfg)), "t").rounds
    steady = [r.round_time_s for r in rounds if r.round >= 2]
    assert S.estimate_steady_mean(row, cal) == pytest.approx(sum(steady) / len(steady), rel=1e-9)


def test_the_committed_result_names_its_model_and_is_in_sample_for_every_row() -> None:
    data = json.loads((ROOT / "benchmarks" / "results" / "in-sample.json").read_text())
    validated = json.loads((ROOT / "benchmarks" / "results" / "validation.json").read_text())
    assert data["made_by"]["model_version"].startswith("m-")
    timed = {r["row"] for v in data["validations"] for r in v["rows"]}
    model = data["made_by"]["model_version"]
    in_sample = [v for v in validated["validations"] if (v.get("made_by") or {}).get("model_version") != model]
    # a validation frozen on the model that made the result is held out: none of its rows may be timed here
    assert not timed & {r["row"] for v in validated["validations"] if v not in in_sample for r in v["rows"]}
    assert timed == {r["row"] for v in in_sample for r in v["rows"]} - {
        r["row"] for x in data["left_out"] for r in validated["validations"][x["validation"] - 1]["rows"]}


def test_a_validation_frozen_on_the_current_model_is_held_out_not_timed(tmp_path: Path, monkeypatch) -> None:
    """Validation 5 froze the model in_sample.py runs: its rows are the out-of-sample check, never in sample."""
    from fedbw.netmodel.version import model_version

    frozen = {"made_by": {"model_version": model_version(), "calibration": "c-3fcff1b96eb9"},
              "rows": [{"row": "mlp-mobile-5g-2", "emulate_mean_s": 12.0}]}
    path = tmp_path / "validation.json"
    path.write_text(json.dumps({"validations": [frozen]}), encoding="utf-8")
    monkeypatch.setattr(S, "VALIDATION", path)
    monkeypatch.setattr(S, "estimate_steady_mean", lambda *a: pytest.fail("a held-out row was timed"))
    data = S.diagnose()
    assert data["validations"] == [] and data["left_out"][0]["why"] == S.HELD_OUT
