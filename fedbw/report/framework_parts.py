"""The framework time by part, model / emulate: which of Flower's costs differ where two engines' rounds do."""

from __future__ import annotations

from typing import Any

from fedbw.flower_protocol import FRAMEWORK_PARTS
from fedbw.report.doc_blocks import md_table
from fedbw.report.format import fmt_s

#: Column titles of the framework parts (fedbw.flower_protocol.FRAMEWORK_PARTS).
PART_TITLES = dict(zip(FRAMEWORK_PARTS, ("SuperNode pull wait", "ClientApp start", "app's own time", "reply pick-up",
                                         "ServerApp poll"), strict=True))
#: The same, once the model's push is counted in the SuperNode's wait (:func:`as_emulate_times`).
FOLDED_TITLES = {**PART_TITLES, "supernode_poll_s": "push + SuperNode pull wait"}


def as_emulate_times(parts: dict[str, float]) -> dict[str, float]:
    """The model's parts cut where emulate's are: emulate times the SuperNode's pull wait from the start of
    the ServerApp's push (``fedbw.fl.measure`` stamps ``t_sent`` before pushing), so the model's push
    (``server_push_s``, a server part of its own) joins it. Both count the ServerApp's pull of the reply in
    its poll."""
    out = {k: float(parts.get(k, 0.0)) for k in FRAMEWORK_PARTS}
    out["supernode_poll_s"] += float(parts.get("server_push_s", 0.0))
    return out


def _pair(model_s: float, emulate_s: float) -> str:
    """One cell: the model's time / emulate's (emulate − model)."""
    return f"{fmt_s(model_s)} / {fmt_s(emulate_s)} ({emulate_s - model_s:+.2f} s)"


def deployment_parts_table(cases: list[dict[str, Any]], model: str = "estimate") -> str:
    """Per case, the steady round's link time and each framework part, ``model`` / emulate and the
    difference, with the model's parts cut as emulate's (:func:`as_emulate_times`); cases whose runs
    carry no parts (recorded before they were): nothing."""
    cases = [c for c in cases if c["engines"].get(model, {}).get("steady_parts_s")
             and c["engines"].get("emulate", {}).get("steady_parts_s")]
    if not cases:
        return ""
    head = ["case", "clients", f"comm: {model} / emulate (Δ)",
            *(f"{t}: {model} / emulate (Δ)" for t in FOLDED_TITLES.values())]
    rows = []
    for c in cases:
        m, e = c["engines"][model], c["engines"]["emulate"]
        mp, ep = as_emulate_times(m["steady_parts_s"]), {k: e["steady_parts_s"].get(k, 0.0) for k in FRAMEWORK_PARTS}
        rows.append([c["case"], str(c["clients"]), _pair(m["steady_comm_s"], e["steady_comm_s"]),
                     *(_pair(mp[k], ep[k]) for k in FOLDED_TITLES)])
    aggregate = max(c["engines"][model]["steady_parts_s"].get("server_aggregate_s", 0.0) for c in cases)
    return (f"\nWhere the rounds differ: the steady round's link time and its framework time by part (the critical "
            f"client's, means; Δ = emulate − {model}). The model's push is counted in the SuperNode's pull wait, as "
            f"emulate times it; its aggregation (at most {fmt_s(aggregate)} here) has no column.\n\n"
            + md_table(head, rows, right=set(range(1, len(head)))))


def framework_parts_table(rows: list[dict[str, Any]]) -> str:
    """Each framework part of the critical path, study / emulate and the difference, for the rows that
    carry them (runs before parts were recorded: nothing). Rows that kept the study's push
    (``server_push_s``) have it counted in the SuperNode's wait, as emulate times it
    (:func:`as_emulate_times`); rows recorded before kept only the five shared parts, and say so."""
    rows = [r for r in rows if r.get("simulate_parts_s") and r.get("emulate_parts_s")]
    if not rows:
        return ""
    folded = all("server_push_s" in r["simulate_parts_s"] for r in rows)
    titles = FOLDED_TITLES if folded else PART_TITLES
    head = ["variant", *(f"{t}: study / emulate (Δ)" for t in titles.values())]
    cells = []
    for r in rows:
        study = as_emulate_times(r["simulate_parts_s"])
        cells.append([r["variant"], *(_pair(study[k], r["emulate_parts_s"][k]) for k in titles)])
    cut = ("the study's push counted in the SuperNode's wait, as emulate times it" if folded else
           "recorded without the study's push, which emulate's SuperNode wait includes")
    return (f"\nThe framework column by part (the critical client's, steady-round means; Δ = emulate − study; {cut}):\n\n"
            + md_table(head, cells, right=set(range(1, len(head)))))
