"""docs/fidelity.md's validation tables (fedbw/report/validation_table.py): how their headers and lines read."""

from __future__ import annotations


def test_a_freezes_header_says_how_its_rows_were_dilated() -> None:
    """Validation 4 on runs every row at its calibration's dilation; earlier freezes ran emulate's auto, capped
    (validations 1 and 2) or not (3). The header said "auto" for all of them until 2026-12-06."""
    from fedbw.report.validation_table import _freeze_dilation

    assert _freeze_dilation({"dilation": 7.0, "max_dilation": None}) == "every row at dilation 7 (its calibration's)"
    assert _freeze_dilation({"dilation": None, "max_dilation": 3}) == "dilation ≤ 3"
    assert _freeze_dilation({"max_dilation": None}).startswith("dilation auto")


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
