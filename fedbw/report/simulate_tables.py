"""docs/simulate.md's bytes table (registered on import by :mod:`fedbw.report.doc_tables`), rendered from
benchmarks/results/simulate.json, which ``benchmarks/simulate.py bytes`` writes: per client and stage, the
bytes the estimate engine predicts beside those simulate measures on Flower's own messages."""

from __future__ import annotations

from typing import Any

from fedbw.report.doc_blocks import md_table, result_table

BYTES_CMD = ".venv/bin/python benchmarks/simulate.py bytes"

#: plain FedAvg: the estimate's bytes per client and stage within this of simulate's, in percent
BYTES_TARGET_PCT = 2.0

FLOAT32 = 4  #: bytes per value of a plain float32 model


def _case_label(case: dict[str, Any] | None, name: str) -> str:
    if case is None:  # a result without its cases' description: the benchmark's own label
        return name
    how = "real training" if case.get("compute") == "real" else "synthetic compute"
    secagg = f", {case['secagg']} SecAgg+" if case.get("secagg") else ""
    return (f"{case['model']}, {how}{secagg}, {case['clients_per_round']} clients per round "
            f"({case['params']:,} params, {case['arrays']} arrays)")


def _diff(pct: float) -> str:
    return f"{pct:+.2f} %".replace("-", "−")


@result_table("simulate.bytes", "simulate.json", BYTES_CMD, needs="bytes", model=True)
def simulate_bytes_markdown(data: dict[str, Any]) -> str:
    """Estimate (predicted) vs simulate (measured): mean bytes per client, stage and direction."""
    b = data["bytes"]
    cases = {c["case"]: c for c in b.get("cases", [])}
    rows, seen = [], set()
    for r in b["rows"]:
        label = "" if r["case"] in seen else _case_label(cases.get(r["case"]), r["case"])
        seen.add(r["case"])
        rows.append([label, r["stage"], r["direction"], f"{r['predicted_bytes']:,.0f}", f"{r['measured_bytes']:,.0f}",
                     _diff(r["diff_pct"])])
    rounds = {c["rounds"] for c in cases.values()}
    over = f"over {rounds.pop()} rounds" if len(rounds) == 1 else "over each case's rounds"
    head = ["case", "stage", "dir", "estimate B", "simulate B", "diff"]
    text = (md_table(head, rows, right={3, 4, 5}) + f"\nMean bytes per client and stage {over}; diff = "
            f"(estimate − simulate) / simulate. Measured {b.get('date', data.get('date_utc', '?'))} on "
            f"{b.get('machine', '?')}.\n")
    return text + "".join(f"\n{line}\n" for line in _notes(b, cases))


def _notes(b: dict[str, Any], cases: dict[str, dict[str, Any]]) -> list[str]:
    notes = []
    plain = [r for r in b["rows"] if not (cases.get(r["case"]) or {}).get("secagg")]
    if plain:
        worst = max(abs(r["diff_pct"]) for r in plain)
        verdict = "met" if worst <= BYTES_TARGET_PCT else "not met"
        notes.append(f"**Target** (plain FedAvg, estimate within {BYTES_TARGET_PCT:g} % of simulate): {verdict} — "
                     f"the largest difference is {worst:.2f} %.")
    fit = _overhead_fit(b, cases)
    if fit:
        notes.append(fit)
    notes += _secagg_notes(b, cases)
    return notes


def _overhead_fit(b: dict[str, Any], cases: dict[str, dict[str, Any]]) -> str | None:
    """Per-message framing and per-array overhead solved from two plain-FedAvg cases with different array
    counts (measured bytes − 4 B × params = framing + arrays × per array), beside payload.py's constants."""
    from fedbw.netmodel.payload import ARRAY_OVERHEAD_BYTES, MESSAGE_OVERHEAD_BYTES

    plain = [c for c in cases.values() if not c.get("secagg")]
    if len({c["arrays"] for c in plain}) < 2:
        return None
    lo, hi = min(plain, key=lambda c: c["arrays"]), max(plain, key=lambda c: c["arrays"])
    framing, per_array = {}, {}
    for d in ("down", "up"):
        extra = {}
        for c in (lo, hi):
            row = next((r for r in b["rows"] if r["case"] == c["case"] and r["direction"] == d), None)
            if row is None:
                return None
            extra[c["case"]] = row["measured_bytes"] - FLOAT32 * c["params"]
        per_array[d] = (extra[hi["case"]] - extra[lo["case"]]) / (hi["arrays"] - lo["arrays"])
        framing[d] = extra[lo["case"]] - lo["arrays"] * per_array[d]
    return (f"Solved from the two plain-FedAvg cases ({lo['model']}: {lo['arrays']} arrays, {hi['model']}: "
            f"{hi['arrays']}; measured bytes − 4 B × params = message framing + arrays × per-array overhead): "
            f"framing {framing['down']:,.0f} B down and {framing['up']:,.0f} B up, mean "
            f"{(framing['down'] + framing['up']) / 2:,.0f} B (`MESSAGE_OVERHEAD_BYTES` = {MESSAGE_OVERHEAD_BYTES:,}); "
            f"per array {per_array['down']:,.0f} B down and {per_array['up']:,.0f} B up "
            f"(`ARRAY_OVERHEAD_BYTES` = {ARRAY_OVERHEAD_BYTES:,}).")


def _secagg_notes(b: dict[str, Any], cases: dict[str, dict[str, Any]]) -> list[str]:
    notes = []
    for c in cases.values():
        if not c.get("secagg"):
            continue
        model = FLOAT32 * c["params"]
        rows = {(r["stage"], r["direction"]): r for r in b["rows"] if r["case"] == c["case"]}
        up, down = rows.get(("collect_masked_vectors", "up")), rows.get(("collect_masked_vectors", "down"))
        parts = []
        if up:
            parts.append(f"the masked upload is {up['measured_bytes'] / model:.2f}× the model's float32 values "
                         f"({model:,} B)")
        if down and len(down.get("measured_by_round", [])) > 1:
            per_round = ", ".join(f"round {i} {v:,.0f} B" for i, v in enumerate(down["measured_by_round"], 1))
            parts.append(f"the download of collect_masked_vectors measured {per_round} (the table's figure is "
                         "their mean)")
        if parts:
            notes.append(f"{c['model']} with {c['secagg']} SecAgg+: " + "; ".join(parts) + ".")
    return notes
