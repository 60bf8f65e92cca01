"""`fedbw calibrate`'s table keeps every constant's name and value whole, at 80 and at 160 columns: the
long "how" column folds instead."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from fedbw.calibration.file import default_calibration
from fedbw.report.calibration import fmt_constant, render_calibration


@pytest.mark.parametrize("width", [80, 160])
def test_no_key_column_is_cut(width: int) -> None:
    cal = default_calibration()
    buf = io.StringIO()
    render_calibration(Console(file=buf, width=width, color_system=None), cal)
    text = buf.getvalue()
    for name, c in cal.constants.items():
        line = next((ln for ln in text.splitlines() if ln.lstrip().startswith(name)), None)
        assert line is not None, f"{name} cut at {width} columns:\n{text}"
        assert fmt_constant(name, c.value) in line
    header = next(ln for ln in text.splitlines() if ln.lstrip().startswith("constant"))
    assert ("how" in header) == (width >= 120)  # the prose column only where it can be read


def test_units_follow_the_constant() -> None:
    assert fmt_constant("download_round_trips", 2.24) == "2.24"
    assert fmt_constant("request_s", 0.0056) == "5.60 ms"
