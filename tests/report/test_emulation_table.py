"""docs/fidelity.md's emulation table says when its emulate runs are older than the table (``--reuse``)."""

from __future__ import annotations

import json
from pathlib import Path

from fedbw.report.emulation_table import emulation_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_the_emulation_table_names_reused_runs_and_their_start() -> None:
    data = json.loads((ROOT / "benchmarks" / "results" / "agreement-emulation.json").read_text(encoding="utf-8"))
    data["reused"] = [{"name": "emulation-2", "engine": "emulate", "run_dir": "emulation-2-emulate-x",
                       "started_utc": "2026-12-03T00:16:27Z"}]
    text = emulation_markdown(data)
    assert "Reused from an earlier run" in text and "00:16" in text
    data["reused"] = []
    assert "Reused from an earlier run" not in emulation_markdown(data)


def _row(**fields: object) -> dict:
    row = {"clients": 2, "dilation": 3.0, "cpu_capped": True, "transfers_ge_1s": 12, "transfers_within_2pct": 7,
           "transfer_median_abs_error": 0.01, "transfer_max_abs_error": 0.2, "simulate_round_s": 22.0,
           "emulate_round_s": 22.5, "round_error": 0.02, "host_share": 0.03, "host_bound_rounds": 0,
           "emulate_rounds_s": [23.0, 22.5, 22.5], "cpu_busy": 0.2}
    return {**row, **fields}


def test_downloads_that_met_the_push_are_counted_apart_when_the_run_logged_the_push() -> None:
    """A run whose ServerApp logged the end of its push counts the downloads that started inside it and
    the transfers within 2 % without them; an older run says '-' and the verdict leaves the count out."""
    data = {"date": "d", "machine": "m", "config": {}, "rows": [
        _row(transfers_met_push=2, transfers_apart_from_push=10, within_2pct_apart_from_push=7)]}
    text = emulation_markdown(data)
    assert "| 2 | 7 of 10 |" in text and "7 of the 10 that did not meet the ServerApp's push" in text
    old = emulation_markdown({**data, "rows": [_row()]})
    assert "| - | - |" in old and "did not meet" not in old


def test_several_emulate_runs_give_the_rounds_scatter_and_emulate_against_itself() -> None:
    """With --trials, a row shows emulate against itself and its round mean's standard error; the verdict
    bounds what any model could reach and says whether a round miss is larger than that scatter."""
    rep = {"pairs": 12, "within_2pct": 5, "median_abs_diff": 0.03, "max_abs_diff": 0.2, "model_bound": 20}
    row = _row(emulate_repeat=rep, emulate_round_sem_s=0.61, simulate_round_s=22.0, emulate_round_s=23.2,
               round_error=23.2 / 22.0 - 1)
    text = emulation_markdown({"date": "d", "machine": "m", "config": {}, "trials": 2, "rows": [row]})
    assert "| 5 of 12 | 22.00 s | 23.20 s ± 0.61 | +5.5 % |" in text
    assert "2 emulate runs per row" in text
    assert "5 of 12 transfer pairs within 2 % of each other" in text and "more than 20 of those 24" in text
    # 1.2 s off, twice the standard error is 1.2 s: within; at 0.5 s standard error it is not
    assert "within twice its standard error of simulate's in 1 of 1" in text
    tight = emulation_markdown({"date": "d", "machine": "m", "config": {}, "rows": [{**row, "emulate_round_sem_s": 0.5}]})
    assert "in 0 of 1" in tight
    one = emulation_markdown({"date": "d", "machine": "m", "config": {}, "rows": [_row()]})
    assert "itself" not in one.split("\n\n", 1)[1] and "standard error of simulate" not in one
    # a row whose second run failed stands on the first and says so
    failed = emulation_markdown({"date": "d", "machine": "m", "config": {}, "trials": 2,
                                 "rows": [_row(failed_trials=["a SuperNode died"])]})
    assert "| - (1 run(s) failed: a SuperNode died) |" in failed


def test_rows_at_two_caps_periods_are_named_and_compared_period_by_period() -> None:
    """--cap-periods: each row names its caps' period, and a table sets the periods side by side (each
    period's rows in the order they ran, the ClientApp's start as the mean over their rounds)."""
    parts = lambda s: [{"clientapp_start_s": s}, {"clientapp_start_s": s + 1}]  # noqa: E731
    rows = [_row(cap_period_ms=100, emulate_round_s=27.0, framework_parts_s=parts(3.0)),
            _row(cap_period_ms=400, emulate_round_s=25.0, round_error=-0.05, framework_parts_s=parts(2.0)),
            _row(cap_period_ms=400, emulate_round_s=26.0, round_error=-0.03, framework_parts_s=parts(2.0)),
            _row(cap_period_ms=100, emulate_round_s=28.0, framework_parts_s=parts(4.0))]
    text = emulation_markdown({"date": "d", "machine": "m", "config": {}, "rows": rows})
    assert "| 2 | 3× capped, 400 ms periods |" in text
    assert "| 100 ms | 2 | 27.00 s, 28.00 s | +2.0 %, +2.0 % |" in text
    assert "| 400 ms | 2 | 25.00 s, 26.00 s | -5.0 %, -3.0 % |" in text
    assert text.rstrip().endswith("rounds.") and "| 4.00 s |" in text and "| 2.50 s |" in text
    assert "caps' period" not in emulation_markdown({"date": "d", "machine": "m", "config": {}, "rows": [_row()]})
