"""``fedbw calibrate``: the constants it measured, with their spread and how."""

from __future__ import annotations

from rich.console import Console

from fedbw.calibration.file import Calibration
from fedbw.report.format import fmt_s
from fedbw.report.tables import new_table


def render_calibration(console: Console, cal: Calibration) -> None:
    t = new_table(f"Flower's costs on this machine ({cal.provenance.get('machine', '?')}, "
                  f"flwr {cal.provenance.get('flwr', '?')})", ("constant", "value", "spread", "samples", "how"),
                  left=("how",))
    for name in sorted(cal.constants):
        c = cal.constants[name]
        t.add_row(name, fmt_s(c.value), fmt_s(c.spread), str(c.samples), c.how)
    console.print(t)
