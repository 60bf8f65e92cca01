"""docs/fidelity.md's stability tables (issue 31.6): the validation grid's rounds under two calibrations of
this machine measured hours apart, and beside them the second rescaled to the first's host speed."""

from __future__ import annotations

from typing import Any

from fedbw.report.doc_blocks import md_table, result_table
from fedbw.report.format import fmt_s, fmt_signed_pct

VALIDATE_CMD = ".venv/bin/python benchmarks/validate.py"


def dilation_label(dilation: Any) -> str:
    """A calibration's dilation as its provenance gives it ("?" for files from before it was recorded)."""
    return "?" if dilation is None else f"{float(dilation):g}"


@result_table("fidelity.stability", "validation-stability.json", f"{VALIDATE_CMD} --stability CALIBRATION",
              model=True)
def stability_markdown(data: dict[str, Any]) -> str:
    """Issue 31.6: the grid's steady rounds under two calibrations of this machine, side by side."""
    a, b = data["shipped"], data["other"]
    rescaled = data.get("rescaled")  # files written before the rescaled diagnosis have none
    rows = [[r["row"], fmt_s(r["shipped_s"]), fmt_s(r["other_s"]), fmt_signed_pct(r["diff"])]
            + ([fmt_s(r["other_at_base_speed_s"]), fmt_signed_pct(r["diff_at_base_speed"])] if rescaled else [])
            for r in data["rows"]]
    within = sum(abs(r["diff"]) <= 0.03 for r in data["rows"])
    k_a, k_b = a.get("dilation"), b.get("dilation")
    apart = ("" if k_a == k_b else
             f" **Measured at different dilations ({dilation_label(k_a)} and {dilation_label(k_b)}): the difference "
             "is the dilation's as much as the hour's, so this is not issue 31.6's check, which needs two "
             "calibrations at one dilation.**")
    base = "Shipped calibration" if not a.get("file") else f"Calibration (`{a['file']}`)"
    return (f"{base} {a['fingerprint']} (fitted {a['created_utc']}, dilation {dilation_label(k_a)}) against "
            f"{b['fingerprint']} (`{b['file']}`, fitted {b['created_utc']}, dilation {dilation_label(k_b)}; "
            f"measured by `{b['measured_by']}`); estimate's steady rounds of the validation grid.{apart}\n\n"
            + md_table(["row", "shipped" if not a.get("file") else "base", "other", "difference"]
                       + (["other at base's host speed", "difference"] if rescaled else []), rows)
            + f"\n{within} of {len(rows)} rows within 3 %; largest difference "
              f"{fmt_signed_pct(max((r['diff'] for r in data['rows']), key=abs))}."
            + (_rescaled_line(data["rows"], rescaled) if rescaled else "")
            + f" Written {data['date']} on {data['machine']}.\n")


def _rescaled_line(rows: list[dict[str, Any]], rescaled: dict[str, float]) -> str:
    """The diagnosis beside the check: the other file with every CPU constant × the base's host reference ÷
    its own (``at_host_speed``), which a prediction made without the hour's reference cannot do."""
    diffs = [r["diff_at_base_speed"] for r in rows]
    return (f" A diagnosis, not the check: rescaled to the base's host speed (reference "
            f"{rescaled['base_reference_s']:.2f} s against {rescaled['other_reference_s']:.2f} s, every CPU constant "
            f"× {rescaled['factor']:.3f}), {sum(abs(d) <= 0.03 for d in diffs)} of {len(diffs)} rows within 3 %, "
            f"largest {fmt_signed_pct(max(diffs, key=abs))}.")


#: The same check for two calibrations at validation 4's dilation (``--against`` writes its own file).
result_table("fidelity.stability-dilation7", "validation-stability-calibration-dilation7.json",
             f"{VALIDATE_CMD} --stability SECOND --against benchmarks/results/calibration-dilation7.toml",
             model=True)(stability_markdown)

#: ... and for validation 5's calibration, the AMD EPYC host's at dilation 7, against a second one measured there.
result_table("fidelity.stability-dilation7-amd-epyc", "validation-stability-calibration-dilation7-amd-epyc.json",
             f"{VALIDATE_CMD} --stability SECOND --against benchmarks/results/calibration-dilation7-amd-epyc.toml",
             model=True)(stability_markdown)
