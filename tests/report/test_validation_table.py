"""docs/fidelity.md's validation tables (fedbw/report/validation_table.py): how their headers and lines read."""

from __future__ import annotations

import pytest


def test_a_freezes_header_says_how_its_rows_were_dilated() -> None:
    """Validation 4 on runs every row at its calibration's dilation; earlier freezes ran emulate's auto, capped
    (validations 1 and 2) or not (3). The header said "auto" for all of them until 2026-12-06."""
    from fedbw.report.validation_table import freeze_dilation

    assert freeze_dilation({"dilation": 7.0, "max_dilation": None}) == "every row at dilation 7 (its calibration's)"
    assert freeze_dilation({"dilation": None, "max_dilation": 3}) == "dilation ≤ 3"
    assert freeze_dilation({"max_dilation": None}).startswith("dilation auto")


def test_a_row_shows_the_frozen_transfer_rule_beside_the_models() -> None:
    """The transfers the model times at ≥ 1 s decide; the rule the validations were frozen with (either engine
    ≥ 1 s) stays visible in its own column, and a row from before it was kept says so with a dash."""
    from fedbw.report.validation_table import _either

    assert _either({"transfers_either_ge_1s": 6, "transfer_median_abs_error_either_ge_1s": 7.557}) == "6: 755.7 %"
    assert _either({"transfers_either_ge_1s": 0, "transfer_median_abs_error_either_ge_1s": None}) == "0: -"
    assert _either({}) == "-"


def test_the_stretched_transfers_line_counts_clean_rows_only_and_says_what_it_could_read() -> None:
    from fedbw.report.validation_table import _stretched

    def row(count: int, known: int, host_bound: int = 0) -> dict:
        return {"host_bound_rounds": host_bound, "stretched_transfers": {
            "count": count, "downloads": count, "emulate_median_s": 1.2, "model_median_s": 0.4,
            "with_details": known, "payload_median_s": 0.1 if known else None, "met_push": 0}}

    assert _stretched([row(0, 0)]) == ""
    line = _stretched([row(4, 0), row(6, 6), row(9, 9, host_bound=2)])  # the host-bound row is left out
    assert "round: 10 (10 downloads)" in line and "of the 6 whose run directory" in line
    assert "whose run directory" not in _stretched([row(4, 0)])  # no run directory left: no payload claim


def _validation(fid: int, rows: list[dict], planned: int = 3, cpu: str | None = None) -> dict:
    verdict = ({"rows": len(rows), "rows_round_within_target": 1, "median_of_row_round_errors": 0.074,
                "rows_mean_within_target": 2, "median_of_row_mean_errors": 0.05, "rows_inside_interval": 1,
                "share_inside_interval": 1 / len(rows), "rows_without_host_bound": 1,
                "rows_transfers_within_target": 0} if rows else {"rows": 0})
    freeze = {"id": fid, "created_utc": f"2026-12-0{fid}T01:00:00Z", "model_version": f"m-{fid}",
              "calibration": f"c-{fid}", "dilation": 7.0, "max_dilation": None, **({"cpu": cpu} if cpu else {})}
    return {"freeze": freeze, "rows": rows, "rows_planned": planned, "verdict": verdict}


def _row(mean_error: float, trial_means: tuple[float, float], round_error: float = 0.0) -> dict:
    return {"mean_error": mean_error, "trials": 2, "emulate_steady_rounds_s": [trial_means[0], trial_means[1]],
            "round_median_abs_error": round_error}


def test_the_validations_at_a_glance_line_each_freeze_and_say_which_is_open_or_abandoned() -> None:
    """One line per validation from the verdicts validate.py wrote: the trend across models is read from data;
    a partial grid says it is open, a grid closed on purpose says it was abandoned; emulate's second trial is
    measured against its first as the model is against emulate."""
    from fedbw.report.validations_glance_table import validations_markdown

    # the model's round errors against emulate's own miss (10 %, 0 %, 10 %): within 10 %, within 5 %, beyond 10 %
    whole = _validation(1, [_row(0.10, (10.0, 11.0), 0.08), _row(-0.02, (9.0, 9.0), 0.03),
                            _row(0.04, (5.0, 5.5), 0.12)])
    open_ = _validation(2, [_row(0.2, (20.0, 20.0), 0.2), _row(0.1, (8.0, 8.8), 0.06)], planned=12, cpu="AMD EPYC")
    gone = _validation(3, [], planned=12)
    data = {"targets": {"round_median_abs_error": 0.05, "rows_inside_interval": 0.8,
                        "transfer_median_abs_error": 0.03},
            "validations": [whole, open_, gone],
            "run_log": [{"kind": "note", "freeze": 3, "abandoned": True, "text": "abandoned"}]}
    text = validations_markdown(data)
    lines = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
             for line in text.splitlines() if line.startswith("| ") and "validation" not in line}
    assert lines["1"][:6] == ["2026-12-01", "m-1", "c-1", "every row at dilation 7 (its calibration's)",
                              "not recorded", "3 of 3"]
    assert lines["1"][6:] == ["1 of 3", "7.4 %", "2 of 3", "1 of 3 (33 %)", "0 of 1", "2 of 3", "9.5 %", "1 of 3",
                              "2 of 3"]
    assert lines["2"][4:6] == ["AMD EPYC", "**open**: 2 of 12"]
    # trials 0 % and 9.5 % apart (0.8 s of 8.4 s): median 4.8 %; by the model's measure 0 % and 10 % (8.8 / 8)
    assert lines["2"][-4:] == ["2 of 2", "4.8 %", "1 of 2", "1 of 2"]  # 20 % against 0 %: no; 6 % against 10 %: yes
    assert lines["3"][5] == "abandoned at 0 of 12" and set(lines["3"][6:]) == {"-"}
    assert "≤ 5 %" in text and "≥ 80 % of rows" in text and "within 3 %" in text


def test_emulate_against_itself_pairs_each_round_with_the_first_trials_same_round() -> None:
    from fedbw.report.validations_glance_table import trial_round_error

    row = {"trials": 2, "emulate_steady_rounds_s": [10.0, 12.0, 11.0, 12.0]}  # trial 1: 10, 12; trial 2: 11, 12
    assert trial_round_error(row) == pytest.approx(0.05)  # the median of 10 % and 0 %
    assert trial_round_error({"trials": 1, "emulate_steady_rounds_s": [10.0, 12.0]}) is None
    assert trial_round_error({"trials": 2, "emulate_steady_rounds_s": [10.0, 12.0, 11.0]}) is None
    assert trial_round_error({"trials": 2, "emulate_steady_rounds_s": [0.0, 11.0]}) is None  # nothing to pair
