"""docs/population.md's generated tables: what a round policy (``[round]``) buys on a mixed population, from
``benchmarks/results/round-policies.json``."""

from __future__ import annotations

from typing import Any

from fedbw.report.doc_blocks import md_table, result_table
from fedbw.report.format import fmt_s, fmt_bytes, fmt_s_interval

POLICIES_CMD = ".venv/bin/python benchmarks/round_policies.py"


@result_table("population.round-policies", "round-policies.json", POLICIES_CMD, needs="rows", model=True)
def round_policies_markdown(data: dict[str, Any]) -> str:
    """One line per model and policy: the mean round with its interval and against waiting for all, updates
    used of clients sampled, late share and wasted uplink per round, hours per 1,000 rounds."""
    rows = [[r["model"], r["policy"], fmt_s_interval(r["round_time_s"], r["round_interval_s"]),
             f"{r['round_ratio']:.2f}×", f"{r['used_per_round']:.1f} / {r['sampled_per_round']:.1f}",
             f"{100 * r['late_share']:.0f} %", fmt_bytes(r["wasted_up_bytes_per_round"]),
             f"{r['hours_per_1000_rounds']:.1f} h"] for r in data["rows"]]
    mix = ", ".join(f"{m['profile']} {m['share']}" for m in data["population"])
    return (md_table(["model", "policy", "round", "vs wait for all", "used / sampled", "late", "wasted up / round",
                      "1,000 rounds"], rows, right=set(range(2, 8)))
            + f"\n{data['clients_total']} clients (shares {mix}), {data['per_round']} per round, {data['rounds']} "
              f"rounds of the {data['engine']} engine with Flower's deployment costs; round = the mean round, "
              f"in brackets the mean 10th–90th percentile; used / sampled = updates the server aggregated of the "
              f"clients it sampled, per round. `{data['command']}`, {data['date']} on {data['machine']}.\n")


@result_table("population.engines", "round-policies.json", POLICIES_CMD + " --engines", needs="engines", model=True)
def round_policy_engines_markdown(data: dict[str, Any]) -> str:
    """The check across engines, per case: per round, each engine's late clients, round time and (where a
    trace moves it) client 0's download, and whether the three engines called the same clients late."""
    check = data["engines"]
    cases = check.get("cases") or {"over-selection": "4 clients sampled for 2 per round (over_select = 2), clients "
                                                     "0 and 1 downloading at 0.5 Mbps, the rest on home-80"}
    out = []
    for case, what in cases.items():
        rows_of = [e for e in check["rows"] if e.get("case", "over-selection") == case]
        by = {(e["engine"], e["round"]): e for e in rows_of}
        engines = list(dict.fromkeys(e["engine"] for e in rows_of))
        rounds = sorted({e["round"] for e in rows_of})
        traced = "trace" in case
        drops = any(e.get("dropped") for e in rows_of)  # a case where clients leave: who dropped, per engine
        rows, same = [], 0
        for r in rounds:
            cells = [by.get((g, r)) for g in engines]
            lates = {(tuple(c["late"]), tuple(c.get("dropped", []))) for c in cells if c is not None}
            same += len(lates) == 1 and all(c is not None for c in cells)
            rows.append([str(r), *(("-" if c is None else
                                    f"{fmt_s_interval(c['round_time_s'], c['round_interval_s'])}, late "
                                    f"{', '.join(map(str, c['late'])) or 'none'}"
                                    + (f", dropped {', '.join(map(str, c['dropped'])) or 'none'}" if drops else "")
                                    + ((f"; client 0's download {fmt_s(c['client0_down_s'])}"
                                        if c.get("client0_down_s") is not None else "; client 0's download "
                                        "not recorded (late: its reply never came in)") if traced else ""))
                                   for c in cells)])
        out.append(f"**{case}**: {what}.\n\n" + md_table(["round", *engines], rows)
                   + f"\nThe same clients late{' and dropped' if drops else ''} in every engine in {same} of "
                     f"{len(rounds)} rounds.\n")
    return ("\n".join(out) + "\nestimate and simulate share the closing rule's code (fedbw/netmodel/close.py) and "
            "the traced link's (fedbw/netmodel/link_rate.py), so their agreement is consistency; emulate shares "
            "none of it, and its column is the check. The small CNN with synthetic compute, 3 rounds. emulate: "
            "undilated, real sockets through the shaper (which replays the trace from the first round's start); "
            f"its ServerApp stops pulling on its own clock. `{POLICIES_CMD} --engines`, {check['date']}.\n")