"""docs/methodology.md's table of the model's constants: each with its bootstrap interval and whether it
earns its place on held-out error (benchmarks/cost_terms.py → benchmarks/results/cost-terms.json)."""

from __future__ import annotations

from typing import Any

from fedbw.report.doc_blocks import TABLES, md_table, result_table
from fedbw.report.calibration import fmt_constant
from fedbw.report.format import fmt_s

#: How the table says each verdict (fedbw.calibrate.evaluate).
VERDICTS = {"earns": "earns its place", "unproven": "**kept, unproven**: not shown on held-out error, interval excludes 0",
            "goes": "**goes**: no better held out, interval reaches 0"}
COST_TERMS_CMD = ".venv/bin/python benchmarks/cost_terms.py --messages benchmarks/results/calibration-backoff.messages.jsonl"


@result_table("methodology.cost-terms", "cost-terms.json", COST_TERMS_CMD, model=True)
def cost_terms_markdown(data: dict[str, Any]) -> str:
    head = ["constant", "term", "value", "90 % interval", "held out by", "error with / without",
            "improvement ± s.e.", "verdict"]
    rows = []
    for c in data["constants"]:
        gain, se = c["improvement_s"], c["improvement_se_s"]
        rows.append([c["name"], c["term"], fmt_constant(c["name"], c["value"]),
                     f"{fmt_constant(c['name'], c['low'])} – {fmt_constant(c['name'], c['high'])}", c["family"],
                     f"{fmt_s(c['error_with_s'])} / {fmt_s(c['error_without_s'])}",
                     "-" if gain is None else f"{fmt_s(gain)} ± {fmt_s(se) if se is not None else '-'}",
                     VERDICTS[c["verdict"]]])
    kept = sum(c["earns_place"] for c in data["constants"])
    return (md_table(head, rows, right={2, 3, 5, 6}) +
            f"\n{kept} of {len(data['constants'])} constants earn their place ({data['folds']}-fold cross-validation "
            f"on the calibration's own messages, {data['resamples']} bootstrap resamples). Messages: "
            f"`{data['messages']}` ({data['message_count']} messages, measured {data['measured_utc']} on "
            f"{data['machine']}); evaluated {data['date']}.\n")


def terms_markdown(_root: object) -> str:
    """The cost terms as the code defines them: name, constants, what the work is."""
    from fedbw.netmodel.terms import TERMS

    rows = [[t.name, ", ".join(f"`{c}`" for c in t.constants), t.doc] for t in TERMS.values()]
    return md_table(["term", "constants", "the work"], rows, right=set())


TABLES["methodology.terms"] = terms_markdown
