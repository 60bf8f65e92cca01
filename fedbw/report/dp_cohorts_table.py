"""docs/privacy-overhead.md, "DP and the cohort": accuracy and ε of central DP against plain FedAvg along the
cohort, from the study.json of experiments/dp-cohorts.toml (``benchmarks/results/dp-cohorts.json``)."""

from __future__ import annotations

import json
from typing import Any

from pathlib import Path

from fedbw.report.doc_blocks import (TABLES, load_result, made_by, made_by_line, md_table, missing, result_table,
                                     stale_note)
from fedbw.report.format import fmt_s_interval
from fedbw.report.privacy_scale_table import SCALE_CMD, row_kind

DP_CMD = "fedbw study experiments/dp-cohorts.toml --result benchmarks/results/dp-cohorts.json"
#: "within a few points of plain": the accuracy loss the page's sentence names the cohort for
CLOSE_POINTS = 3.0


def _axis(data: dict[str, Any]) -> str:
    return next(iter(data["grid"]))


def closest_cohorts(data: dict[str, Any], points: float = CLOSE_POINTS) -> dict[str, Any]:
    """Per DP variant: the smallest value of the grid's setting at which its accuracy comes within ``points``
    percentage points of the baseline's in the same cell (None: at no value the study ran)."""
    baseline, key = data.get("baseline", "plain"), _axis(data)
    first = data["profiles"][0]
    acc = {(row_kind(r), r["cell"][key]): r["accuracy"] for r in data["rows"] if r["profile"] == first}
    out: dict[str, Any] = {}
    for kind in dict.fromkeys(k for k, _ in acc):
        if kind == baseline:
            continue
        out[kind] = next((v for v in data["grid"][key]
                          if acc.get((kind, v)) is not None and acc.get((baseline, v)) is not None
                          and 100 * (acc[(baseline, v)] - acc[(kind, v)]) <= points + 1e-9), None)
    return out


@result_table("privacy.dp-cohorts", "dp-cohorts.json", DP_CMD, needs="grid", model=True)
def dp_cohorts_markdown(data: dict[str, Any]) -> str:
    """One line per cohort and variant: accuracy after the last round (and against plain), ε with its δ,
    sampling and adjacency, and the cohort's steady round re-timed on each profile, with its interval."""
    baseline, key = data.get("baseline", "plain"), _axis(data)
    profiles = data["profiles"]
    by = {(row_kind(r), json.dumps(r["cell"], sort_keys=True), r["profile"]): r for r in data["rows"]}
    kinds = list(dict.fromkeys(row_kind(r) for r in data["rows"]))
    cells = list(dict.fromkeys(json.dumps(r["cell"], sort_keys=True) for r in data["rows"]))
    rows = []
    for cell in cells:
        for kind in kinds:
            first = by.get((kind, cell, profiles[0]))
            if first is None:
                continue
            base = by.get((baseline, cell, profiles[0]))
            acc, eps = first.get("accuracy"), first.get("epsilon")
            delta = ("" if kind == baseline or acc is None or base is None or base.get("accuracy") is None
                     else f" ({100 * (acc - base['accuracy']):+.1f})".replace("-", "−"))
            eps_text = "-" if eps is None else (f"{eps:.3g} (δ {first.get('epsilon_delta'):g}, "
                                                f"{first.get('epsilon_sampling')}, {first.get('epsilon_adjacency')})")
            times = [fmt_s_interval(r["round_time_s"], r.get("round_interval_s"))
                     if (r := by.get((kind, cell, p))) else "-" for p in profiles]
            rows.append([str(json.loads(cell)[key]), kind, "-" if acc is None else f"{100 * acc:.1f} %{delta}",
                         eps_text, str(first["rounds"]), *times])
    close = closest_cohorts(data)
    said = "; ".join(f"{k}: {'not within the cohorts run' if v is None else f'{key} = {v}'}" for k, v in close.items())
    env = data.get("environment", {})
    return (md_table([key, "variant", "accuracy (vs plain, points)", "ε", "rounds",
                      *(f"round on {p}" for p in profiles)], rows, right={0, 4, *range(5, 5 + len(profiles))})
            + f"\naccuracy = the server's evaluation on the held-out digits after the last round; ε after the last "
              f"round; round = the steady round of the {data.get('engine')} engine re-timed with every sampled "
              f"client on the profile (median, 10th–90th percentile). Where DP first comes within "
              f"{CLOSE_POINTS:g} points of {baseline}: {said}. `{data.get('command')}`, started "
              f"{data.get('started_utc')} on {env.get('platform', '?')}, {env.get('cpu_count', '?')} CPU(s).\n")


def _answer_secagg(scale: dict[str, Any], profile: str) -> list[list[str]]:
    """Per model, at the smallest and the largest cohort on ``profile``: stock and packed SecAgg+'s round and
    uplink against plain."""
    out = []
    grid = scale["grid"]
    by = {(row_kind(r), r["cell"].get("model.name"), r["cell"].get("clients.per_round")): r
          for r in scale["rows"] if r["profile"] == profile}
    cohorts = grid.get("clients.per_round", [])
    for model in grid.get("model.name", []):
        for n in (cohorts[0], cohorts[-1]) if cohorts else ():
            cells = []
            for kind in ("secagg-stock", "secagg-packed"):
                r = by.get((kind, model, n))
                cells.append("-" if r is None or r.get("round_ratio") is None else
                             f"round {r['round_ratio']:.2f}×, up {r['uplink_ratio']:.2f}×")
            out.append([f"SecAgg+ for {model}, {n} clients per round, {profile}", *cells])
    return out


def answer_markdown(scale: dict[str, Any] | None, cohorts: dict[str, Any] | None) -> str:
    """The page's answer first: what SecAgg+ costs against plain for each model (its overhead is exchanges for
    a small model, bytes for a large one: stock doubles them, packed does not), and how many clients per round
    central DP needs to come within a few points of plain, at what ε and how many hours of rounds on home
    uplinks. Rendered from the two studies' JSON; a missing one leaves its lines out."""
    lines: list[str] = []
    if scale:
        profile = scale["profiles"][0]
        rows = _answer_secagg(scale, profile)
        lines.append(md_table(["question", "stock SecAgg+ vs plain", "packed SecAgg+ vs plain"], rows)
                     + f"\nFrom `{scale.get('command')}` (estimate engine), started {scale.get('started_utc')}.\n")
    if cohorts:
        key = _axis(cohorts)
        first = cohorts["profiles"][0]
        by = {(row_kind(r), r["cell"][key], r["profile"]): r for r in cohorts["rows"]}
        rows = []
        for kind, n in closest_cohorts(cohorts).items():
            if n is None:
                rows.append([kind, f"more than {cohorts['grid'][key][-1]}", "-", "-", "-"])
                continue
            r, base = by[(kind, n, first)], by[(cohorts.get("baseline", "plain"), n, first)]
            hours = {p: by[(kind, n, p)]["round_time_s"] * 100 / 3600 for p in cohorts["profiles"]
                     if (kind, n, p) in by}
            rows.append([kind, str(n), f"{100 * r['accuracy']:.1f} % (plain {100 * base['accuracy']:.1f} %)",
                         "-" if r.get("epsilon") is None else f"{r['epsilon']:.3g}",
                         ", ".join(f"{p} {h:.2f} h" for p, h in hours.items())])
        lines.append(md_table(["DP variant", f"{key} within {CLOSE_POINTS:g} points of plain", "accuracy",
                               "ε", "100 rounds at that cohort"], rows)
                     + f"\nFrom `{cohorts.get('command')}` ({cohorts.get('engine')} engine, real training), started "
                       f"{cohorts.get('started_utc')}.\n")
    return "\n".join(lines) if lines else "(no study data yet: run the two commands below)\n"


def render_answer(root: Path) -> str:
    """The "privacy.answer" block: both studies' JSON, each current under this fedbw's model (a stale one says
    so instead of its numbers)."""
    parts = []
    data = {}
    for name, command in (("privacy-at-scale.json", SCALE_CMD), ("dp-cohorts.json", DP_CMD)):
        d = load_result(root, name)
        stale = stale_note(made_by(d), command) if d else None
        if stale:
            parts.append(stale)
        data[name] = None if (d is None or stale) else d
    if not any(data.values()):
        return "".join(parts) or missing("privacy-at-scale.json", SCALE_CMD)
    stamp = made_by(data["privacy-at-scale.json"] or data["dp-cohorts.json"])
    return "".join(parts) + answer_markdown(data["privacy-at-scale.json"], data["dp-cohorts.json"]) \
        + made_by_line(stamp, SCALE_CMD)


TABLES["privacy.answer"] = render_answer
