"""docs/privacy-overhead.md, "At scale": the privacy-at-scale study's overheads per model, cohort and profile,
from the study.json it wrote (``benchmarks/results/privacy-at-scale.json``)."""

from __future__ import annotations

import json
import statistics
from typing import Any

from fedbw.report.doc_blocks import md_table, result_table
from fedbw.report.format import fmt_s, fmt_s_interval

SCALE_CMD = ("fedbw study experiments/privacy-at-scale.toml --result benchmarks/results/privacy-at-scale.json")


def row_kind(row: dict[str, Any]) -> str:
    """A study.json row's variant as the study file names it (older files: the run's name)."""
    return row.get("kind") or row["variant"]


def _ratio(row: dict[str, Any] | None, key: str) -> str:
    value = None if row is None else row.get(key)
    return "-" if value is None else f"{value:.2f}×"


@result_table("privacy.at-scale", "privacy-at-scale.json", SCALE_CMD, needs="grid", model=True)
def privacy_at_scale_markdown(data: dict[str, Any]) -> str:
    """One line per cell of the grid and profile: the baseline's round (with its interval), then each other
    variant's round time against it and, where it differs from 1, its uplink bytes against it."""
    baseline = data.get("baseline", "plain")
    grid: dict[str, list[Any]] = data["grid"]
    kinds = [k for k in dict.fromkeys(row_kind(r) for r in data["rows"]) if k != baseline]
    by = {(row_kind(r), json.dumps(r["cell"], sort_keys=True), r["profile"]): r for r in data["rows"]}
    cells = list(dict.fromkeys(json.dumps(r["cell"], sort_keys=True) for r in data["rows"]))
    head = [*grid, "profile", f"{baseline} round", *(f"{k}: round (up)" for k in kinds)]
    rows = []
    for cell in cells:
        values = json.loads(cell)
        for profile in data["profiles"]:
            base = by.get((baseline, cell, profile))
            if base is None:
                continue
            line = [str(values.get(k)) for k in grid] + [profile, fmt_s_interval(base["round_time_s"],
                                                                                  base.get("round_interval_s"))]
            for k in kinds:
                r = by.get((k, cell, profile))
                up = _ratio(r, "uplink_ratio")
                line.append(_ratio(r, "round_ratio") + ("" if up in ("1.00×", "-") else f" ({up})"))
            rows.append(line)
    plain = [r["round_time_s"] for r in data["rows"] if row_kind(r) == baseline]
    env = data.get("environment", {})
    ranges = _ranges(data, kinds)
    return (md_table(head, rows, right=set(range(len(grid) + 1, len(head))))
            + f"\nround = the steady round of the {data.get('engine')} engine, every sampled client on the row's "
              f"profile; the others: round time (uplink bytes, where not 1.00×) against {baseline} in the same cell "
              f"and profile; a round's mean can lie above its interval when a few of Flower's poll phases meet a "
              f"whole poll step. {baseline}'s rounds span {fmt_s(min(plain))} to {fmt_s(max(plain))}. {ranges} "
              f"`{data.get('command')}`, started {data.get('started_utc')} on {env.get('platform', '?')}, "
              f"{env.get('cpu_count', '?')} CPU(s).\n")


def _ranges(data: dict[str, Any], kinds: list[str]) -> str:
    """Per variant, the range of its round ratio per value of each grid setting's first and last value
    (e.g. the smallest and the largest cohort): the sentences the page's prose leans on."""
    out = []
    for key, values in data["grid"].items():
        if len(values) < 2:
            continue
        for value in (values[0], values[-1]):
            parts = []
            for k in kinds:
                ratios = [r["round_ratio"] for r in data["rows"] if row_kind(r) == k
                          and r["cell"].get(key) == value and r.get("round_ratio") is not None]
                if ratios:
                    parts.append(f"{k} {min(ratios):.2f}–{max(ratios):.2f}×")
            if parts:
                out.append(f"At {key} = {value}: " + ", ".join(parts) + ".")
    return " ".join(out)


SECAGG_CMD = ".venv/bin/python benchmarks/secagg_scale.py"


def _now(rows: list[dict[str, Any]], tol: float, per_cell: bool = False) -> str:
    """The same model on SecAgg+'s primitives timed in this run: the model's own error, apart from the host's
    drift since the calibration timed its constants."""
    now = [r for r in rows if r.get("error_now") is not None]
    if not now:
        return ""
    errors = [r["error_now"] for r in now]
    when = "just before each cell's rounds" if per_cell else "at its start"
    return (f"The same model on SecAgg+'s primitives timed in this run, {when} (not the calibration's): within "
            f"{100 * tol:g} % in {sum(abs(e) <= tol for e in errors)} of {len(now)} rows, errors {_pct(min(errors))} "
            f"to {_pct(max(errors))} (median {_pct(statistics.median(errors))}).\n")


def _without_fedavg(data: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """What the measured column holds: since 2026-12-06 the stage less FedAvg's ``aggregate_fit`` (the model
    charges the replies' aggregation by its own term, not in its unmask stage); before, the whole stage."""
    if data.get("server_measures") != "secagg_work":
        return " (the whole stage, FedAvg's aggregate_fit included, which the model's unmask stage leaves out)"
    fedavg = [r["stage_s"] - r["measured_s"] for r in rows if r.get("stage_s") is not None]
    said = f": {fmt_s(min(fedavg))} to {fmt_s(max(fedavg))} a round here" if fedavg else ""
    return (f" less FedAvg's aggregate_fit at its end (which the model charges by its aggregation term, not in "
            f"its unmask stage{said})")


def _earlier(runs: list[dict[str, Any]], rows: list[dict[str, Any]], stamp: Any, tol: float,
             estimator: str | None = None) -> str:
    """Each earlier run of the same rows: how far the measured unmask moved since (with the model and its
    constants unchanged, the host's drift and the rounds' own scatter), and, where that run had this model
    and calibration (``stamp``), how many of its rows were within ``tol``."""
    # the whole stage, FedAvg included, as every earlier run measured it (``stage_s`` since 2026-12-06 16:00 UTC)
    now = {(r["clients"], r["shares"], r["dropped"]): r.get("stage_s", r["measured_s"]) for r in rows}
    model = {(r["clients"], r["shares"], r["dropped"]): r["model_s"] for r in rows}
    out = []
    for run in runs:
        moves = [now[k] / r["measured_s"] - 1 for r in run["rows"]
                 if (k := (r["clients"], r["shares"], r["dropped"])) in now]
        if moves:
            then = ""
            if run.get("made_by") == stamp:  # the same model and constants: that run's verdict is computable
                hits = sum(abs(model[k] / r["measured_s"] - 1) <= tol for r in run["rows"]
                           if (k := (r["clients"], r["shares"], r["dropped"])) in model)
                then = f"; that run within {100 * tol:g} % in {hits} of {len(moves)}"
            if run.get("estimator") != estimator:  # runs before 2026-12-06 05:56 UTC kept no estimator
                then += "; that run took the fastest round without dropouts, the mean with them"
            out.append(f"{_pct(min(moves))} to {_pct(max(moves))} against the run of {run['date']} "
                       f"(median {_pct(statistics.median(moves))}, {len(moves)} rows{then})")
    return ("Measured again: this run's unmask stage is " + "; ".join(out) + ".\n") if out else ""


#: The unmask stage's parts in the order its table lists them: the model's, then what only the rounds have.
UNMASK_PARTS = ("combine_seed", "combine_key", "prg", "ecdh", "add", "mod", "dequantize", "bookkeeping", "aggregate_fit")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}–{max(values):.2f}]" if values else "-"


def unmask_parts_markdown(rows: list[dict[str, Any]]) -> str:
    """The unmask stage part by part over the cells whose rounds were traced: per part, how often Flower's
    workflow called it against the model's count, and its measured CPU time against the model's, on the
    calibration's constants and on those timed in the same run (median and range over the cells)."""
    traced = [r for r in rows if r.get("parts")]
    if not traced:
        return ""
    out = []
    for part in UNMASK_PARTS:
        cells = [r["parts"][part] for r in traced if part in r["parts"]]
        if not cells:
            continue
        modelled = [c for c in cells if "model_calls" in c]
        if part == "bookkeeping" or not modelled:
            calls = "-"
        else:
            same = sum(abs(c["calls"] - c["model_calls"]) < 0.5 for c in modelled)
            calls = f"{same} of {len(modelled)}"
        def ratios(key: str) -> list[float]:
            return [c["measured_s"] / c[key] for c in modelled if c.get(key) and c["measured_s"] > 0]
        share = [c["measured_s"] / r["parts_stage_s"] for r in traced for c in [r["parts"].get(part)]
                 if c is not None and r.get("parts_stage_s")]
        out.append([f"`{part}`", calls, _spread(ratios("model_s")), _spread(ratios("model_now_s")),
                    f"{100 * statistics.median(share):.0f} %" if share else "-"])
    return (md_table(["part", "calls as the model counts (cells)", "measured / model",
                      "measured / model on this run's primitives", "share of the stage (median)"], out,
                     right={1, 2, 3, 4})
            + f"\nThe unmask stage part by part, over the {len(traced)} cells above whose rounds were traced "
              "(`measure_secagg_round(trace=True)`: each primitive Flower's workflow calls, timed in CPU time; the "
              "mean over a cell's rounds). The model's "
              "parts are `server_unmask_parts`, whose counts are exact (who dropped is known; how many shares each "
              "combine has is not, and is the model's expectation). `aggregate_fit` is FedAvg "
              "over the replies, which the model charges as the stage's aggregation, not here; `bookkeeping` is "
              "the stage outside every traced call. Ratios: median [range] over cells.\n")


def _estimator(data: dict[str, Any]) -> str:
    """How a cell's measured unmask was taken from its rounds (the check's runs before 2026-12-06 05:45 UTC took
    the fastest round without dropouts and the mean with them)."""
    if data.get("estimator") == "median":
        return f"the median of {data['dropout_repeats']} rounds, those that finished, with and without dropouts"
    return (f"without dropouts the fastest of {data['repeats']}; with dropouts the mean of "
            + (f"{data['dropout_repeats']} rounds, those that finished" if "dropout_repeats" in data
               else f"the best of {data['repeats']}"))


def _pct(x: float) -> str:
    return f"{100 * x:+.2f} %".replace("-", "−")


@result_table("privacy.secagg-scale", "secagg-scale.json", SECAGG_CMD, needs="server", model=True)
def secagg_scale_markdown(data: dict[str, Any]) -> str:
    """SecAgg+'s model against real rounds: bytes per stage (simulate) and the server's unmasking, with the
    verdict against issue 34.4's targets."""
    out = []
    tol_b, tol_s = data["targets"]["bytes"], data["targets"]["server"]
    if data.get("bytes"):
        rows = [[str(r["clients"]), r["stage"], r["direction"], f"{r['measured_bytes']:,.0f}",
                 f"{r['predicted_bytes']:,.0f}", _pct(r["error"])] for r in data["bytes"]]
        worst = max(abs(r["error"]) for r in data["bytes"])
        big = [abs(r["error"]) for r in data["bytes"] if r["measured_bytes"] >= 100_000]
        worst_abs = max(abs(r["predicted_bytes"] - r["measured_bytes"]) for r in data["bytes"])
        out.append(md_table(["clients", "stage", "dir", "simulate B", "model B", "error"], rows, right={0, 3, 4, 5})
                   + f"\nBytes per client, stock SecAgg+ (small CNN, 2 rounds, 3 shares): largest |error| "
                     f"{100 * worst:.2f} % ({'within' if worst <= tol_b else 'beyond'} the {100 * tol_b:g} % target), "
                     f"at most {worst_abs:,.0f} B in any message"
                     + (f"; in the messages of ≥ 100 kB (the masked vectors, the model) at most {100 * max(big):.2f} %"
                        if big else "") + ".\n")
    rows = []
    measured = [r for r in data["server"] if not r.get("halted")]
    for r in data["server"]:
        survive = ("" if "model_completes" not in r else
                   f"; rounds completed {r['runs'] - r['halted_runs']} of {r['runs']}, model "
                   f"{100 * r['model_completes']:.0f} %")
        if r.get("halted"):
            rows.append([str(r["clients"]), str(r["shares"]), str(r["dropped"]), "halted", "-", "-",
                         f"every round gave up ({r.get('runs', data['repeats'])}): too few of a dropped client's "
                         "share holders left" + survive])
            continue
        extra = ("-" if "dropped_cost_measured_s" not in r else
                 f"{fmt_s(r['dropped_cost_measured_s'])} / {fmt_s(r['dropped_cost_model_s'])}")
        if r.get("dropped") and "measured_range_s" in r:  # rounds with dropouts vary by themselves: their range
            lo, hi = r["measured_range_s"]
            extra += f" (rounds {fmt_s(lo)}–{fmt_s(hi)}{survive})"
        rows.append([str(r["clients"]), str(r["shares"]), str(r["dropped"]), fmt_s(r["measured_s"]),
                     fmt_s(r["model_s"]), _pct(r["error"]), extra])
    within = sum(abs(r["error"]) <= tol_s for r in measured)
    out.append(md_table(["clients", "shares", "dropped", "unmask measured", "unmask model", "error",
                         "dropped clients' cost: measured / model"], rows, right=set(range(7)))
               + f"\nThe server's unmask stage{_without_fedavg(data, measured)}, {data['vector_len']:,} values, real "
                 f"rounds on Flower's SecAgg+ workflow in-process ({_estimator(data)}): {within} of {len(measured)} "
                 f"within {100 * tol_s:g} %"
                 f"{f' ({len(rows) - len(measured)} halted)' if len(rows) > len(measured) else ''}. "
                 f"Measured {data.get('server_date', data['date'])} on {data['machine']}.\n"
               + _now(measured, tol_s, data.get("primitives_timed") == "per cell")
               + _earlier(data.get("earlier_server") or [], measured, data.get("made_by"), tol_s, data.get("estimator")))
    if (parts := unmask_parts_markdown(measured)):
        out.append(parts)
    if data.get("survival"):  # the chance a round completes at the study's settings (the model's rule)
        srows = [[str(r["clients"]), str(r["shares"]), f"{100 * r['dropout']:.0f} %",
                  f"{100 * r['completes']:.1f} %"] for r in data["survival"]]
        out.append(md_table(["clients", "shares", "dropping after the share exchange", "rounds that complete"], srows,
                            right={0, 1, 2, 3})
                   + "\nWhether a SecAgg+ round survives its dropouts, at the study's settings (threshold 2): Flower "
                     "1.42 halts the round unless every sampled node keeps 2 active share holders among those around it "
                     "on a shuffled ring (`fedbw/privacy/secagg_dropouts.py`; the rounds above check the rule against "
                     "real rounds).\n")
    if data.get("combine_key"):  # why rounds with dropouts vary: which share of a dropped client is lost
        by: dict[int, list[float]] = {}
        for c in data["combine_key"]:
            by.setdefault(c["shares"], []).append(c["combine_s"])
        out.append("Combining a dropped client's key from its neighbours' shares (its own lost), by which share is "
                   "lost: " + "; ".join(f"{n} shares {fmt_s(min(v))}–{fmt_s(max(v))}" for n, v in sorted(by.items()))
                   + f" ({data.get('combine_key_estimator', 'the fastest of 5 each')}).\n")
    return "\n".join(out)
