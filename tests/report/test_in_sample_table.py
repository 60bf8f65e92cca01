"""docs/fidelity.md's in-sample table: every validated row under the frozen, the previous and the current
model, said to be in sample, with each validation's median |error| and rows within 5 %."""

from __future__ import annotations

from fedbw.netmodel.version import model_version
from fedbw.report.in_sample_table import in_sample_markdown


def _row(name: str, emulate: float, frozen: float, previous: float, now: float) -> dict:
    return {"row": name, "emulate_mean_s": emulate, "frozen_estimate_s": frozen, "frozen_error": frozen / emulate - 1,
            "previous_estimate_s": previous, "previous_error": previous / emulate - 1,
            "estimate_s": now, "error": now / emulate - 1}


def test_each_row_under_each_model_and_the_verdict_per_validation() -> None:
    data = {"date": "d", "made_by": {"model_version": model_version(), "calibration": "per validation"},
            "previous_model": "m-old",
            "validations": [{"validation": 4, "frozen_model": "m-frozen", "calibration": "c-1",
                             "calibration_file": "cal.toml", "calibration_found": "the frozen calibration",
                             "rows": [_row("3M-home-80-4", 25.0, 20.0, 20.0, 25.5), _row("mlp-home-80-2", 8.0, 8.2, 8.2, 8.1)]}],
            "left_out": [{"validation": 1, "why": "its calibration is not among the repository's calibration files"}]}
    text = in_sample_markdown(data)
    assert f"| validation | row | emulate (mean steady round) | estimate, frozen model (error) | estimate, m-old (error) | estimate, {model_version()} (error) |" in text
    assert "| 4 | 3M-home-80-4 | 25.00 s | 20.00 s (−20.0 %) | 20.00 s (−20.0 %) | 25.50 s (+2.0 %) |" in text
    assert "**In sample, not a validation**" in text
    # median |error| 11.25 % (20 and 2.5) → 11.25 % → 1.6 % (2 and 1.25); within 5 %: 1 → 1 → 2
    assert "median |error| 11.2 % → 11.2 % → 1.6 %, rows within 5 % 1 → 1 → 2 of 2" in text
    assert "Validation 1 is left out" in text


def test_without_a_previous_model_the_column_is_left_out() -> None:
    data = {"date": "d", "made_by": {"model_version": model_version(), "calibration": "per validation"},
            "validations": [{"validation": 4, "frozen_model": "m-frozen", "calibration": "c-1",
                             "calibration_file": "cal.toml", "rows": [_row("r", 10.0, 9.0, 9.0, 10.0)]}]}
    text = in_sample_markdown(data)
    assert "m-old" not in text and "| 4 | r | 10.00 s | 9.00 s (−10.0 %) | 10.00 s (+0.0 %) |" in text
