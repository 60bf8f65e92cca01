"""docs/fidelity.md's held-out validation (issue 31.5): the frozen model against dilated emulate on a grid
of configs no calibration saw, each row's errors and whether emulate's rounds fell inside the model's
interval, the verdict against issue 31's targets, and the run log's count, from benchmarks/validate.py's
JSON (every validation it holds, the earlier ones too: none is replaced by a later one)."""

from __future__ import annotations

import statistics
from typing import Any

from fedbw.report.doc_blocks import md_table, result_table, table
from fedbw.report.format import fmt_pct, fmt_s, fmt_signed_pct
from fedbw.report.stability_table import VALIDATE_CMD


def _yes(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "**no**")


def trial_gap(row: dict[str, Any]) -> float | None:
    """How far emulate's trials of a row are apart: the largest minus the smallest trial's mean steady round,
    over the pooled mean (the pooled rounds are the trials' steady rounds one trial after another; None when
    they do not split evenly). The reference's own repeatability, to set beside the model's error."""
    rounds, k = row["emulate_steady_rounds_s"], int(row.get("trials") or 0)
    if k < 2 or not rounds or len(rounds) % k:
        return None
    n = len(rounds) // k
    means = [sum(rounds[i * n:(i + 1) * n]) / n for i in range(k)]
    return (max(means) - min(means)) / (sum(rounds) / len(rounds))


def _transfer_pct(e: float | None) -> str:
    return "-" if e is None else f"{100 * e:.1f} %"


def _either(row: dict[str, Any]) -> str:
    """The transfers either engine timed at ≥ 1 s and their median error: the rule the validations were frozen
    with, kept beside the unbiased one (benchmarks/validate.py, ``transfer_errors``)."""
    n = row.get("transfers_either_ge_1s")
    return "-" if n is None else f"{n}: {_transfer_pct(row.get('transfer_median_abs_error_either_ge_1s'))}"


def _rows(rows: list[dict[str, Any]]) -> str:
    head = ["row (model, profile, clients)", "dilation", "emulate steady rounds", "trials apart", "simulate [80 %]",
            "estimate", "round error (median)", "median abs error", "mean error", "pooled mean inside",
            "single rounds inside",
            "transfers the model times ≥ 1 s", "their median abs error", "either engine ≥ 1 s (frozen rule)",
            "host-bound rounds"]
    body = []
    for r in rows:
        lo_hi = r["simulate_interval_s"]
        sim = fmt_s(r["simulate_steady_mean_s"]) + (f" [{lo_hi[0]:.2f}–{lo_hi[1]:.2f}]" if lo_hi else "")
        gap = trial_gap(r)
        body.append([r["row"], f"{r['dilation']:g}×", ", ".join(f"{x:.2f}" for x in r["emulate_steady_rounds_s"]),
                     "-" if gap is None else f"{100 * gap:.1f} %", sim,
                     fmt_s(r["estimate_steady_mean_s"]), fmt_signed_pct(r["round_median_error"]),
                     fmt_pct(r["round_median_abs_error"]) if r["round_median_abs_error"] is None
                     else f"{100 * r['round_median_abs_error']:.1f} %",
                     fmt_signed_pct(r.get("mean_error")), _yes(r["pooled_inside_interval"]), fmt_pct(r["single_rounds_inside_interval"]),
                     str(r["transfers_ge_1s"]), _transfer_pct(r["transfer_median_abs_error"]),
                     _either(r),
                     f"{r['host_bound_rounds']} of {r['rounds']}"])
    return md_table(head, body)


def _parts(rows: list[dict[str, Any]]) -> str:
    head = ["row", "emulate comm", "simulate comm", "emulate framework", "simulate framework", "host reference",
            "host CPU busy"]
    return md_table(head, [[r["row"], fmt_s(r["emulate_comm_s"]), fmt_s(r["simulate_comm_s"]),
                            fmt_s(r["emulate_framework_s"]), fmt_s(r["simulate_framework_s"]),
                            fmt_s(r.get("host_reference_s")), fmt_pct(r.get("host_cpu_busy"))] for r in rows])


def _part_detail(rows: list[dict[str, Any]]) -> str:
    from fedbw.flower_protocol import FRAMEWORK_PARTS

    body = []
    for r in rows:
        e, m = r.get("emulate_parts_s"), r.get("simulate_parts_s")
        if not e or not m:
            continue
        body.append([r["row"]] + [f"{e.get(p, 0.0):.2f} / {m.get(p, 0.0):.2f}" for p in FRAMEWORK_PARTS])
    return md_table(["row"] + [p.removesuffix("_s") for p in FRAMEWORK_PARTS], body) + _part_gaps(rows)


def _part_gaps(rows: list[dict[str, Any]]) -> str:
    """Where the gap between the engines sits: emulate − simulate per part, mean over the plain rows and over
    the SecAgg+ rows (a part the model lacks or misprices shows as one gap shared by the rows; a host-bound
    row's gap is the host's)."""
    from fedbw.flower_protocol import FRAMEWORK_PARTS

    groups: dict[str, list[dict[str, float]]] = {}
    for r in rows:
        e, m = r.get("emulate_parts_s"), r.get("simulate_parts_s")
        if e and m:
            kind = "SecAgg+ rows" if r["row"].endswith("-secagg") else "plain rows"
            groups.setdefault(kind, []).append({p: e.get(p, 0.0) - m.get(p, 0.0) for p in FRAMEWORK_PARTS})
    if not groups:
        return ""
    said = []
    for kind in ("plain rows", "SecAgg+ rows"):
        gaps = groups.get(kind)
        if gaps:
            mean = {p: sum(g[p] for g in gaps) / len(gaps) for p in FRAMEWORK_PARTS}
            said.append(f"{kind} ({len(gaps)}): " + ", ".join(f"{p.removesuffix('_s')} {mean[p]:+.2f} s"
                                                                for p in FRAMEWORK_PARTS)
                        + f" (sum {sum(mean.values()):+.2f} s)")
    return "\nEmulate − simulate per part, mean over rows: " + "; ".join(said) + ".\n"


def trial_gaps(rows: list[dict[str, Any]]) -> list[float]:
    """Every row's :func:`trial_gap` that is known, smallest first."""
    return sorted(g for r in rows if (g := trial_gap(r)) is not None)


def mean_errors(rows: list[dict[str, Any]]) -> list[float]:
    """Every row's mean error (emulate's mean steady round against the model's) that is known."""
    return [r["mean_error"] for r in rows if r.get("mean_error") is not None]


def _repeatability(rows: list[dict[str, Any]], target: float) -> str:
    """Emulate against itself: the trials' gap per row, its median, and the rows whose own trials are further
    apart than the round-time target (a target the reference cannot repeat is a finding, not a fit)."""
    gaps = trial_gaps(rows)
    if not gaps:
        return ""
    mid = statistics.median(gaps)
    beyond = sum(g > target for g in gaps)
    return (f" Emulate against itself: its trials' mean steady rounds are a median {100 * mid:.1f} % apart "
            f"(largest {100 * gaps[-1]:.1f} %); in {beyond} of {len(gaps)} rows further apart than the "
            f"{100 * target:.0f} % the model is asked to meet.")


def _verdict(v: dict[str, Any], targets: dict[str, float], planned: int, rows: list[dict[str, Any]]) -> str:
    if not v.get("rows"):
        return f"No row finished yet (of {planned} planned).\n"
    share = v["share_inside_interval"]
    return (f"Rows finished: {v['rows']} of {planned}. Round time: {v['rows_round_within_target']} of {v['rows']} "
            f"rows within {100 * targets['round_median_abs_error']:.0f} % (median abs error; median over rows "
            f"{100 * v['median_of_row_round_errors']:.1f} %)"
            + (f"; emulate's mean round within {100 * targets['round_median_abs_error']:.0f} % of the model's in "
               f"{v['rows_mean_within_target']} of {v['rows']} rows (median {100 * v['median_of_row_mean_errors']:.1f} %)"
               if v.get("median_of_row_mean_errors") is not None else "")
            + ". Emulate's pooled steady rounds inside the model's 80 % "
            f"interval: {v['rows_inside_interval']} of {v['rows']} rows"
            + ("" if share is None else f" ({100 * share:.0f} %, target {100 * targets['rows_inside_interval']:.0f} %)")
            + f". Transfers the model times at ≥ 1 s, rows without a host-bound round: "
            f"{v['rows_transfers_within_target']} of {v['rows_without_host_bound']} within "
            f"{100 * targets['transfer_median_abs_error']:.0f} % (median abs error)"
            + (f"; by the rule the validation was frozen with (either engine ≥ 1 s): "
               f"{v['rows_transfers_within_target_either_ge_1s']} of {v['rows_without_host_bound_either_ge_1s']}"
               if "rows_without_host_bound_either_ge_1s" in v else "")
            + "." + _sign(rows) + _repeatability(rows, targets["round_median_abs_error"]) + "\n")


def _stretched(rows: list[dict[str, Any]]) -> str:
    """The transfers only the frozen rule counted (emulate ≥ 1 s, the model shorter), over the rows without a
    host-bound round: how long they were in each engine and how long their payload took on the link, which
    says whether the link or something around it stretched them."""
    got = [r["stretched_transfers"] for r in rows if r.get("stretched_transfers") and r["host_bound_rounds"] == 0]
    n = sum(g["count"] for g in got)
    if not n:
        return ""

    def median_of(key: str) -> str:
        vals = [g[key] for g in got if g[key] is not None]
        return fmt_s(statistics.median(vals)) if vals else "-"

    known = sum(g["with_details"] for g in got)
    detail = ("" if not known else
              f"; of the {known} whose run directory was there to say, the payload itself crossed the link in "
              f"{median_of('payload_median_s')} (median of the rows' medians) and {sum(g['met_push'] for g in got)} "
              "met the ServerApp's push")
    return (f"Transfers only the frozen rule counts (emulate ≥ 1 s, the model shorter), rows without a host-bound "
            f"round: {n} ({sum(g['downloads'] for g in got)} downloads), emulate {median_of('emulate_median_s')} "
            f"against the model's {median_of('model_median_s')} (medians of the rows' medians){detail}.\n")


def _sign(rows: list[dict[str, Any]]) -> str:
    """Which way the model misses: a model that errs both ways has noise to narrow, one that errs one way a
    cost it lacks or misprices."""
    means = mean_errors(rows)
    if not means:
        return ""
    return (f" Emulate's mean round is longer than the model's in {sum(m > 0 for m in means)} of {len(means)} rows "
            f"(mean errors {fmt_signed_pct(min(means))} to {fmt_signed_pct(max(means))}).")


def freeze_dilation(freeze: dict[str, Any]) -> str:
    """How a freeze dilated its rows: one dilation for all (validation 4 on), else emulate's auto per row,
    capped or not."""
    if freeze.get("dilation") is not None:
        return f"every row at dilation {freeze['dilation']:g} (its calibration's)"
    if freeze.get("max_dilation") is not None:
        return f"dilation ≤ {freeze['max_dilation']}"
    return "dilation auto (each device a core, the server two)"


# Not ``model=True``: a validation is of the model it froze, and stays visible when the model moves on
# (an earlier validation is never dropped); each one says whether its model is this fedbw's.
@result_table("fidelity.validation", "validation.json", VALIDATE_CMD)
def validation_markdown(data: dict[str, Any]) -> str:
    from fedbw.netmodel.version import model_version

    out = []
    now = model_version()
    checked = [str(v["freeze"]["id"]) for v in data["validations"] if v["freeze"]["model_version"] == now]
    for val in data["validations"]:
        f = val["freeze"]
        current = ("the current model" if f["model_version"] == now
                   else f"not the current model ({now}), which "
                        + (f"validation {', '.join(checked)} checks" if checked else "no validation has checked yet"))
        out.append(f"**Validation {f['id']}** of {current}, frozen {f['created_utc']}: model {f['model_version']}, "
                   f"calibration "
                   f"{f['calibration']} ({f['calibration_file']}, fitted {f['calibration_created_utc']}), commit "
                   f"{f['commit'][:10]}; {f['rounds']} rounds a run, {f['trials']} emulate trials a row, "
                   + freeze_dilation(f) + f"; {f['machine']}.\n")
        out.append(_rows(val["rows"]) if val["rows"] else "")
        if val["rows"] and "emulate_comm_s" in val["rows"][0]:
            out.append("\nWhere the steady rounds' time went (means), and the host's speed while the trials ran (a fresh "
                       "ClientApp load; the calibration's own: "
                       + fmt_s(val.get("calibration_host_reference_s")) + ") and how busy its CPUs were (mean of the "
                       "steady rounds, host-wide):\n")
            out.append(_parts(val["rows"]))
        if any(r.get("emulate_parts_s") and r.get("simulate_parts_s") for r in val["rows"]):
            out.append("\nFlower's framework time by part, steady-round means, emulate / simulate (the parts of the "
                       "critical client; docs/emulate.md defines them):\n")
            out.append(_part_detail(val["rows"]))
        out.append("\n" + _verdict(val["verdict"], data["targets"], val["rows_planned"], val["rows"])
                   + _stretched(val["rows"]))
    notes = [e for e in data["run_log"] if e.get("kind") == "note"]  # what happened beside a run, said in the log
    invalid = [e for e in data["run_log"] if e.get("kind") == "invalid"]  # a trial logged ok that lost replies
    log = [e for e in data["run_log"] if e.get("kind") not in ("note", "invalid")]
    failed = [e for e in log if e.get("status") != "ok"]
    by_error: dict[str, list[str]] = {}
    for e in failed:
        by_error.setdefault(e.get("error", "?"), []).append(f"{e['row']} {e['kind']}")
    out.append(f"\nRun log (`benchmarks/results/validation-runs.jsonl`): {len(log)} runs, {len(failed)} failed"
               + ("".join(f"; {len(runs)} × {err} ({', '.join(sorted(set(runs)))})" for err, runs in by_error.items())
                  if failed else "")
               + (f"; {len(invalid)} logged ok and found invalid later" if invalid else "")
               + f". Written {data['date']}.\n")
    for e in invalid:
        lost = e.get("lost_replies") or []
        out.append(f"- Found invalid, validation {e.get('freeze', '?')}, {e['row']} trial {e['trial']} "
                   f"({e.get('utc', '?')}, `{e['run_dir']}`): {len(lost)} replies lost"
                   + (f" (first: {lost[0]})" if lost else "") + f". {e.get('text', '')}\n")
    for n in notes:
        out.append(f"- Note on validation {n.get('freeze', '?')}" + (f", {n['row']}" if n.get("row") else "")
                   + (f" trial {n['trial']}" if n.get("trial") is not None else "") + f" ({n.get('utc', '?')}): "
                   + n.get("text", "") + "\n")
    return "\n".join(x for x in out if x)


@result_table("fidelity.model-change", "model-change.json",
              ".venv/bin/python benchmarks/model_change.py --frozen-root <a checkout of the freeze's commit>")
def model_change_markdown(data: dict[str, Any]) -> str:
    """Whether the validation grids' rounds moved between the frozen model and the current one (estimate)."""
    from fedbw.netmodel.version import model_version

    n, diff = len(data["rows"]), data["max_rel_diff"]
    current = data["current_model"]
    note = "" if current == model_version() else (f" (this fedbw's model is {model_version()}, not checked here: "
                                                  "run the script again)")
    verdict = ("the same rounds, bit for bit" if diff == 0 else
               f"rounds that differ by at most {100 * diff:.3g} % (rows: {', '.join(data['rows_differing'])})")
    return (f"Every validation grid's {n} rows, timed by estimate under the frozen model {data['frozen_model']} "
            f"(commit {data['frozen_commit'][:10]}) and under {current}{note}: {verdict}. "
            f"`benchmarks/model_change.py`, {data['date']}.\n")


@result_table("fidelity.dilation", "dilation.json", ".venv/bin/python benchmarks/dilation.py")
def dilation_markdown(data: dict[str, Any]) -> str:
    """Is emulate's reference inflated by the host: the same rows at the validation's dilation and at twice it.

    Not ``model=True``: the finding is about emulate; the model's round is shown beside it, with its version."""
    from fedbw.flower_protocol import FRAMEWORK_PARTS

    head = ["row", "dilation", "trials", "steady round (trial means)", "framework", "comm", "host CPU busy"]
    body, moved = [], []
    for r in data["rows"]:
        for which in ("auto", "double"):
            s = r.get(which)
            k = r["auto_dilation"] * (1 if which == "auto" else data["factor"])
            if s is None:
                body.append([r["row"], f"{k:g}", "0", "failed"] + ["-"] * 3)
                continue
            body.append([r["row"], f"{k:g}", str(s["trials"]),
                         f"{fmt_s(s['steady_mean_s'])} ({', '.join(fmt_s(x) for x in s['trial_means_s'])})",
                         fmt_s(s["framework_s"]), fmt_s(s["comm_s"]), fmt_pct(s.get("host_cpu_busy"))])
        a, b = r.get("auto"), r.get("double")
        if a and b:
            parts = ", ".join(f"{p.removesuffix('_s')} {b['parts_s'][p] - a['parts_s'][p]:+.2f} s" for p in FRAMEWORK_PARTS)
            moved.append(f"- **{r['row']}**: doubling the dilation moved the steady round by "
                         f"{fmt_signed_pct(b['steady_mean_s'] / a['steady_mean_s'] - 1)} "
                         f"({fmt_s(a['steady_mean_s'])} → {fmt_s(b['steady_mean_s'])}; the model: "
                         f"{fmt_s(r['estimate_steady_mean_s'])}); by part: {parts}.\n")
    stamp = data.get("made_by") or {}
    return (md_table(head, body) + "\n" + "".join(moved)
            + f"\nEach row's trials alternated auto and double dilation (A B B A; one trial each: A B), "
              f"{data['rounds']} rounds a trial, the steady rounds pooled, side by side in one run started "
              f"{data['date']} on {data['machine']} (commit "
              f"{str(data.get('commit', '?'))[:10]}; the model's round from model {stamp.get('model_version', '?')}, "
              f"calibration {stamp.get('calibration', '?')}).\n")


@result_table("fidelity.cpu-cap", "cpu-cap.json", ".venv/bin/python benchmarks/cpu_cap.py")
def cpu_cap_markdown(data: dict[str, Any]) -> str:
    """Does emulate's CPU cap of 1/K core deliver its share: each workload's wall time under the cap against K ×
    its uncapped time, and the CPU time the cap gave it against what the cap allows over that wall time."""
    factors = sorted({r["factor"] for r in data["rows"]})
    workloads = list(dict.fromkeys(r["workload"] for r in data["rows"]))
    by = {(r["workload"], r["factor"]): r for r in data["rows"]}
    head = ["workload"] + ["uncapped: wall (CPU)" if k == 1
                           else f"cap 1/{k}: wall (÷ K × uncapped; CPU; cap gave)" for k in factors]
    body = []
    for w in workloads:
        cells = [w]
        for k in factors:
            r = by.get((w, k))
            if r is None:
                cells.append("-")
            elif k == 1:
                cells.append(f"{fmt_s(r['wall_s'])} ({fmt_s(r['cpu_s'])})")
            else:
                cells.append(f"{fmt_s(r['wall_s'])} ({r['slowdown_per_share']:.2f}×; {fmt_s(r['cpu_s'])}; "
                             f"{r['delivered_share']:.2f})")
        body.append(cells)
    return (md_table(head, body) + f"\nMedians of {data['repeats']} runs of the work in a fresh process. Uncapped: its "
            f"wall time and, in brackets, its CPU time (user + system). Under a cap of 1/K core: its wall time, then "
            f"that time ÷ (K × the uncapped wall time) (1.00×: as slow as its share predicts from the uncapped run), "
            f"its CPU time, and what the cap gave: the work's CPU time ÷ (its wall time ÷ K) (1.00: the whole share "
            f"of a core). Caps account over periods of {data.get('period_ms', 100):g} ms. "
            f"{data['date']}, {data['machine']}.\n")


#: the same benchmark with a longer accounting period than emulate's (a throttled device waits less often)
result_table("fidelity.cpu-cap-period", "cpu-cap-period-400.json",
             ".venv/bin/python benchmarks/cpu_cap.py --period-ms 400")(cpu_cap_markdown)


@result_table("fidelity.cpu-cap-periods", "cpu-cap-periods.json",
              ".venv/bin/python benchmarks/cpu_cap.py --compare-periods 100,400")
def cpu_cap_periods_markdown(data: dict[str, Any]) -> str:
    """What the caps' accounting period does to the work's CPU time: each workload's CPU time under each cap at
    each period, against its uncapped CPU time, the periods run side by side."""
    periods = data["periods_ms"]
    factors = sorted({r["factor"] for r in data["rows"] if r["factor"] > 1})
    workloads = list(dict.fromkeys(r["workload"] for r in data["rows"]))
    by = {(r["workload"], r["factor"], r["period_ms"]): r for r in data["rows"]}
    head = ["workload", "uncapped CPU"] + [f"cap 1/{k}: CPU at " + " / ".join(f"{ms} ms" for ms in periods)
                                           for k in factors]
    body = []
    for w in workloads:
        base = by[(w, 1, None)]["cpu_s"]
        cells = [w, fmt_s(base)]
        for k in factors:
            cpus = [by[(w, k, ms)]["cpu_s"] if (w, k, ms) in by else None for ms in periods]
            cells.append(" / ".join("-" if c is None else f"{fmt_s(c)} ({fmt_signed_pct(c / base - 1)})" for c in cpus))
        body.append(cells)
    return (md_table(head, body) + f"\nCPU time (user + system) of the work in a fresh process, median of "
            f"{data['repeats']} runs; in brackets, against its uncapped CPU time. Under each cap the periods "
            f"alternated run by run. {data['date']}, {data['machine']}.\n")
