"""docs/fidelity.md's in-sample table: the current model on every row the validations ran, beside emulate's
measured round and the estimate each validation recorded under its own frozen model
(``benchmarks/results/in-sample.json``, written by ``benchmarks/in_sample.py``).

In sample on purpose, and said so in every line: these rows are why the model changed, so agreement here
shows that a change did what it was made for and what it did elsewhere, never that the model predicts."""

from __future__ import annotations

import statistics
from typing import Any

from fedbw.report.doc_blocks import md_table, result_table
from fedbw.report.format import fmt_s

IN_SAMPLE_CMD = ".venv/bin/python benchmarks/in_sample.py"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f} %".replace("-", "−")


def _median_abs(values: list[float | None]) -> str:
    known = [abs(v) for v in values if v is not None]
    return f"{100 * statistics.median(known):.1f} %" if known else "-"


@result_table("fidelity.in-sample", "in-sample.json", IN_SAMPLE_CMD, needs="validations", model=True)
def in_sample_markdown(data: dict[str, Any]) -> str:
    """One line per validation row: emulate's mean steady round, the estimate under the validation's frozen
    model and under this one (each with its error against emulate); then per validation the median |error|
    of each, and which validations could not be timed again."""
    previous = data.get("previous_model")
    keys = ["frozen", *(["previous"] if previous else []), ""]
    rows, summary = [], []
    for v in data["validations"]:
        for r in v["rows"]:
            cells = [f"{fmt_s(r[f'{k}_estimate_s' if k else 'estimate_s'])} ({_pct(r[f'{k}_error' if k else 'error'])})"
                     if r.get(f"{k}_estimate_s" if k else "estimate_s") else "-" for k in keys]
            rows.append([str(v["validation"]), r["row"], fmt_s(r["emulate_mean_s"]), *cells])
        medians = " → ".join(_median_abs([r.get(f"{k}_error" if k else "error") for r in v["rows"]]) for k in keys)
        within = " → ".join(str(sum(abs(e) <= 0.05 for r in v["rows"] if (e := r.get(f"{k}_error" if k else "error"))
                                    is not None)) for k in keys)
        summary.append(f"validation {v['validation']} (frozen model {v.get('frozen_model')}, calibration "
                       f"`{v['calibration_file']}`: {v.get('calibration_found', 'the frozen calibration')}): median "
                       f"|error| {medians}, rows within 5 % {within} of {len(v['rows'])}")
    left = "".join(f" Validation {x['validation']} is left out: {x['why']}." for x in data.get("left_out", []))
    current = data["made_by"]["model_version"]
    head = ["validation", "row", "emulate (mean steady round)", "estimate, frozen model (error)",
            *([f"estimate, {previous} (error)"] if previous else []), f"estimate, {current} (error)"]
    order = "frozen model → " + (f"{previous} → " if previous else "") + current
    return (md_table(head, rows, right=set(range(2, len(head))))
            + f"\n**In sample, not a validation**: every row here was seen before the model changed, and the "
              f"change was made from them. The estimate engine (the model alone, predicted bytes and compute); "
              f"the frozen model's column is what each validation recorded under its freeze, the others time its "
              f"rows again under the calibration it froze. Per validation, median |error| and rows within 5 %, "
              f"{order}: " + "; ".join(summary) + "." + left + f" `{IN_SAMPLE_CMD}`, {data['date']}.\n")
