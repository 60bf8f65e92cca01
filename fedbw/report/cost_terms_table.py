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


#: How a cell of the across table says each verdict (short; the table above says them in full).
SHORT_VERDICTS = {"earns": "earns", "unproven": "unproven", "goes": "**goes**"}
COST_TERMS_ACROSS_CMD = ".venv/bin/python benchmarks/cost_terms.py --across"


def _host_label(cpu: str) -> str:
    """A CPU's name short enough for a column head ("Intel(R) Xeon(R) Processor" → "Xeon")."""
    words = [w for w in cpu.replace("(R)", "").split() if w not in ("Intel", "Processor", "CPU")]
    return " ".join(words) or "?"


@result_table("methodology.cost-terms-across", "cost-terms-across.json", COST_TERMS_ACROSS_CMD, model=True)
def cost_terms_across_markdown(data: dict[str, Any]) -> str:
    """Each constant's verdict on every committed calibration's messages, one column per calibration: a
    constant that earns its place on one host and dilation and goes on another measures the calibrating
    host, not Flower."""
    cals = data["calibrations"]
    names = sorted({c["name"] for cal in cals for c in cal["constants"]})
    head = ["constant"] + [f"{i}: {_host_label(cal['cpu'])}, K = {cal['dilation']:g}" for i, cal in enumerate(cals, 1)]
    head.append("earns / unproven / goes")
    rows = []
    for name in names:
        cells, counts = [], dict.fromkeys(SHORT_VERDICTS, 0)
        for cal in cals:
            c = next((c for c in cal["constants"] if c["name"] == name), None)
            if c is None:
                cells.append("-")
                continue
            counts[c["verdict"]] += 1
            cells.append(f"{SHORT_VERDICTS[c['verdict']]} {fmt_constant(name, c['value'])}")
        rows.append([name, *cells, " / ".join(str(counts[v]) for v in SHORT_VERDICTS)])
    hops = [(i, cal["hop_by_direction"]) for i, cal in enumerate(cals, 1) if cal.get("hop_by_direction")]
    hop_line = ("" if not hops else
                " The hop term (one per-object and per-MiB cost for both directions), fitted on the unshaped "
                "transfers and held against each direction alone, measured ÷ predicted (median; downloads, "
                "uploads): " + "; ".join(f"{i}: {_ratio(h['down'])}, {_ratio(h['up'])}" for i, h in hops) + ".")
    sources = "; ".join(f"{i}: `{cal['messages']}` ({cal['message_count']} messages, measured {cal['measured_utc']})"
                        for i, cal in enumerate(cals, 1))
    return (md_table(head, rows, right=set(range(1, len(cals) + 1))) +
            f"\nK: the calibration's dilation. Each column is one calibration's own messages, evaluated as the "
            f"table above ({data['folds']}-fold cross-validation, {data['resamples']} bootstrap resamples, seed "
            f"{data['seed']}): {sources}.{hop_line} Evaluated {data['date']}.\n")


def _ratio(side: dict[str, Any]) -> str:
    r = side.get("median_measured_over_predicted")
    return "-" if r is None else f"×{r:.2f}"
