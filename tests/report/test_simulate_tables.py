"""docs/simulate.md's bytes table renders every figure from simulate.json, and says which command writes it
when it is missing."""

from __future__ import annotations

import json
from pathlib import Path

import fedbw.report.doc_tables  # noqa: F401 - registers the blocks
from fedbw.calibration.file import load_costs, model_stamp
from fedbw.report.doc_blocks import TABLES
from fedbw.report.simulate_tables import simulate_bytes_markdown


def _row(case: str, direction: str, predicted: float, measured: float, stage: str = "fit") -> dict:
    return {"case": case, "stage": stage, "direction": direction, "predicted_bytes": predicted,
            "measured_bytes": measured, "diff_pct": 100 * (predicted - measured) / measured,
            "predicted_by_round": [predicted, predicted], "measured_by_round": [measured - 1, measured + 1]}


def _data() -> dict:
    cases = [{"case": "a", "model": "tiny", "params": 100, "arrays": 2, "compute": "real", "clients_per_round": 5,
              "rounds": 2, "secagg": None},
             {"case": "b", "model": "big", "params": 1000, "arrays": 12, "compute": "synthetic",
              "clients_per_round": 2, "rounds": 2, "secagg": None}]
    # measured = 4 B × params + framing (500 down, 1,000 up) + 400 B per array
    rows = [_row("a", "down", 2_100, 1_700), _row("a", "up", 2_100, 2_200),
            _row("b", "down", 9_500, 9_300), _row("b", "up", 9_500, 9_800)]
    return {"bytes": {"cases": cases, "rows": rows, "date": "2026-12-05 01:00 UTC", "machine": "test box",
                      "made_by": model_stamp(load_costs(None))}}


def test_bytes_table_shows_estimate_simulate_and_diff_per_case_and_direction() -> None:
    text = simulate_bytes_markdown(_data())
    assert "| tiny, real training, 5 clients per round (100 params, 2 arrays) | fit | down | 2,100 | 1,700 | +23.53 % |" in text
    assert "|  | fit | up | 2,100 | 2,200 | −4.55 % |" in text  # the case is named once
    assert "over 2 rounds" in text and "2026-12-05 01:00 UTC" in text and "test box" in text
    assert "not met — the largest difference is 23.53 %" in text
    assert "framing 500 B down and 1,000 B up, mean 750 B" in text and "per array 400 B down and 400 B up" in text


def test_bytes_block_says_which_model_made_it_and_how_to_make_it(tmp_path: Path) -> None:
    assert "no data yet" in TABLES["simulate.bytes"](tmp_path) and "simulate.py bytes" in TABLES["simulate.bytes"](tmp_path)
    path = tmp_path / "benchmarks" / "results" / "simulate.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_data()))
    text = TABLES["simulate.bytes"](tmp_path)
    assert "| big, synthetic compute, 2 clients per round (1,000 params, 12 arrays) |" in text
    assert f"*Model {model_stamp(load_costs(None))['model_version']}, calibration " in text
