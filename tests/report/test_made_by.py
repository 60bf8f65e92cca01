"""Every model number says which model made it: a doc block of model numbers names the model version and
the calibration, and data from another model version render as stale, so ``fedbw docs --check`` fails."""

from __future__ import annotations

import json
from pathlib import Path

from fedbw.config import config_from_dict
from fedbw.netmodel.version import model_version
from fedbw.report.doc_blocks import TABLES, result_table
from fedbw.report.docs import regenerate
from fedbw.runner import run_experiment


@result_table("test.made-by", "made-by-test.json", "bench --case x", model=True)
def _render(data: dict) -> str:
    return f"| value |\n|---|\n| {data['value']} |\n"


def _root(tmp_path: Path, data: dict) -> Path:
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "made-by-test.json").write_text(json.dumps(data))
    (tmp_path / "docs").mkdir()
    return tmp_path


def test_current_model_numbers_name_their_model_and_calibration(tmp_path: Path) -> None:
    root = _root(tmp_path, {"value": 7, "made_by": {"model_version": model_version(), "calibration": "c-abc"}})
    out = TABLES["test.made-by"](root)
    assert "| 7 |" in out and f"Model {model_version()}, calibration c-abc" in out


def test_numbers_of_another_model_are_stale_and_docs_check_fails(tmp_path: Path) -> None:
    root = _root(tmp_path, {"value": 7, "made_by": {"model_version": "m-000000000000", "calibration": "c-abc"}})
    doc = root / "docs" / "page.md"
    doc.write_text("<!-- fedbw-table: test.made-by -->\n| value |\n|---|\n| 7 |\n<!-- /fedbw-table -->\n")
    assert regenerate(root, check=True) == [doc]  # the doc still shows the old model's numbers
    regenerate(root)
    text = doc.read_text()
    assert "| 7 |" not in text and "stale" in text and "m-000000000000" in text and "bench --case x" in text
    assert regenerate(root, check=True) == []


def test_docs_stale_lists_each_command_that_writes_another_models_numbers_again(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from fedbw.cli import app
    from fedbw.report.docs import render_stale

    root = _root(tmp_path, {"value": 7, "made_by": {"model_version": model_version(), "calibration": "c-abc"}})
    assert render_stale(root).startswith("every model result is of this fedbw's model")
    (root / "benchmarks" / "results" / "made-by-test.json").write_text(
        json.dumps({"value": 7, "made_by": {"model_version": "m-000000000000", "calibration": "c-abc"}}))
    text = render_stale(root)
    assert "- `bench --case x` (made by m-000000000000): test.made-by (made-by-test.json)" in text
    res = CliRunner().invoke(app, ["docs", "--stale", "--root", str(root)])
    assert res.exit_code == 0 and "bench --case x" in res.output


def test_numbers_without_a_stamp_say_their_model_is_unknown(tmp_path: Path) -> None:
    out = TABLES["test.made-by"](_root(tmp_path, {"value": 7}))
    assert "| 7 |" in out and "not recorded" in out


def test_a_model_engines_records_header_carries_its_stamp(tmp_path: Path) -> None:
    cfg = config_from_dict({"name": "stamp", "engine": "estimate", "output_dir": str(tmp_path),
                            "model": {"name": "mlp"}, "clients": {"total": 2, "per_round": 2, "compute": "synthetic"},
                            "training": {"rounds": 2}})
    res = run_experiment(cfg)
    head = json.loads((Path(res.run_dir) / "records.jsonl").read_text().splitlines()[0])
    assert head["made_by"]["model_version"] == model_version()
    assert head["made_by"]["calibration"].startswith("c-")
    assert res.rounds[1].round_interval_s is not None  # the deployment model's rounds carry their interval
    lo, hi = res.rounds[1].round_interval_s
    assert lo <= res.rounds[1].round_median_s <= hi
