"""``fedbw calibrate``: the constants it measured, with their interval, spread and how."""

from __future__ import annotations

from rich.console import Console

from fedbw.calibration.file import RETIRED, Calibration, Constant
from fedbw.netmodel.flower_costs import COUNTS
from fedbw.report.format import fmt_s
from fedbw.report.tables import Col, FitTable

#: Constants that are not seconds (counts).
UNITLESS = COUNTS


def fmt_constant(name: str, value: float | None) -> str:
    """A constant's value in its unit: seconds, or a bare number for a count."""
    if value is None:
        return "-"
    return f"{value:.3g}" if name in UNITLESS else fmt_s(value)


def retired_note(cal: Calibration) -> str:
    """A line naming the constants the file holds that the model retired, and why ('' when none)."""
    if not cal.retired:
        return ""
    items = "; ".join(f"`{k}` = {fmt_constant(k, v)} ({RETIRED[k]})" for k, v in sorted(cal.retired.items()))
    return f"\nIn the file but retired from the model, so not used: {items}.\n"


def fmt_interval(name: str, c: Constant) -> str:
    return "-" if c.interval is None else f"{fmt_constant(name, c.interval[0])} – {fmt_constant(name, c.interval[1])}"


#: Below this many columns the table leaves out how each constant was measured (it is in the file).
HOW_MIN_WIDTH = 120


def render_calibration(console: Console, cal: Calibration) -> None:
    """The constants, their interval, spread and samples; how each was measured where the terminal is wide
    enough to show it readably (the calibration file always says). Key columns, never cut: constant and
    value; where the terminal is too narrow the others leave in this order: samples, spread, 90 % interval."""
    how = console.width >= HOW_MIN_WIDTH
    t = FitTable(f"Flower's costs on this machine ({cal.provenance.get('machine', '?')}, "
                 f"flwr {cal.provenance.get('flwr', '?')})",
                 [Col("constant", key=True), Col("value", key=True), Col("90 % interval"), Col("spread"),
                  Col("samples"), *([Col("how", wrap=True)] if how else [])],
                 drop=(*(["how"] if how else []), "samples", "spread", "90 % interval"),
                 caption=None if how else ("how each constant was measured: the calibration file (`how`), or a "
                                           f"terminal of {HOW_MIN_WIDTH} columns"),
                 left_out="the calibration file has every figure")
    for name in sorted(cal.constants):
        c = cal.constants[name]
        t.add_row(name, fmt_constant(name, c.value), fmt_interval(name, c), fmt_constant(name, c.spread),
                  str(c.samples), *([c.how] if how else []))
    console.print(t)
    if cal.retired:
        console.print(retired_note(cal).strip(), highlight=False)
