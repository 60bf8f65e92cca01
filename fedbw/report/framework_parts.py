"""The framework time by part, study / emulate: which of Flower's costs differ where two engines' rounds do."""

from __future__ import annotations

from typing import Any

from fedbw.netmodel.flower import FRAMEWORK_PARTS
from fedbw.report.doc_blocks import md_table
from fedbw.report.format import fmt_s

#: Column titles of the framework parts (fedbw.netmodel.flower.FRAMEWORK_PARTS) in the privacy breakdown.
PART_TITLES = dict(zip(FRAMEWORK_PARTS, ("SuperNode pull wait", "ClientApp start", "app's own time", "reply pick-up",
                                         "ServerApp poll"), strict=True))


def framework_parts_table(rows: list[dict[str, Any]]) -> str:
    """Each framework part of the critical path, study / emulate and the difference, for the rows that
    carry them (runs before parts were recorded: nothing)."""
    rows = [r for r in rows if r.get("simulate_parts_s") and r.get("emulate_parts_s")]
    if not rows:
        return ""
    head = ["variant", *(f"{t}: study / emulate (Δ)" for t in PART_TITLES.values())]
    cells = [[r["variant"], *(f"{fmt_s(r['simulate_parts_s'][k])} / {fmt_s(r['emulate_parts_s'][k])} "
                              f"({r['emulate_parts_s'][k] - r['simulate_parts_s'][k]:+.2f} s)" for k in PART_TITLES)]
             for r in rows]
    return ("\nThe framework column by part (the critical client's, steady-round means; Δ = emulate − study):\n\n"
            + md_table(head, cells, right=set(range(1, len(head)))))
