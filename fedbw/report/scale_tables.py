"""docs/simulate.md's scale tables (registered in :mod:`fedbw.report.doc_tables`), rendered from
benchmarks/results/scale.json, which ``benchmarks/scale.py`` writes: what thousands of simulated clients
per round cost, and where it goes."""

from __future__ import annotations

from typing import Any

from fedbw.report.doc_blocks import md_table, result_table
from fedbw.report.format import fmt_s

SCALE_CMD = ".venv/bin/python benchmarks/scale.py"


def _gib(b: float) -> str:
    return f"{b / 2**30:.2f}"


@result_table("simulate.scale", "scale.json", SCALE_CMD, needs="sim1000", model=True)
def simulate_scale_markdown(data: dict[str, Any]) -> str:
    """simulate with synthetic compute at 1,000 and 5,000 clients per round: where time, CPU and memory go."""
    rows, notes = [], []
    for case in ("sim1000", "sim5000"):
        if case not in data:
            continue
        c = data[case]
        for run in ("fedbw", "bare"):
            if run not in c:
                continue
            r = c[run]
            cpu, mem = r["cpu_s"], r["peak_rss_by_kind"]
            rows.append([f"{r['clients_per_round']:,} of {r['clients_total']:,}",
                         "fedbw" if run == "fedbw" else "Flower bare (fedbw's measurement off)",
                         fmt_s(r["steady_round_wall_s"]), f"{r['ms_per_client']:.1f} ms",
                         ", ".join(fmt_s(w) for w in r["round_wall_s"]),
                         f"{_gib(r['peak_rss_bytes'])} ({_gib(mem['driver'])} / "
                         f"{_gib(mem['ray actors'] + mem['ray system'])})",
                         f"{cpu['driver']:.0f} / {cpu['ray actors'] + cpu['ray system']:.0f}",
                         f"{r['load_average'][0]:.1f}"])
        if "fedbw_share" in c:
            notes.append(f"at {c['fedbw']['clients_per_round']:,} clients per round fedbw's measurement is "
                         f"{100 * c['fedbw_share']:.0f} % of the steady round (fedbw vs bare, side by side)")
        notes.append(f"{c['fedbw']['clients_per_round']:,}: measured {c['date']} on {c['machine']}")
    # Ray's workers and its own processes in one column: scale.py before 2026-12-01 16:30 classified a
    # worker by its first command line, which is Ray's worker script until the worker renames itself
    head = ["clients per round", "run", "steady round", "per client", "rounds", "peak RSS GiB (driver / Ray)",
            "CPU s (driver / Ray)", "load"]
    return md_table(head, rows, right={2, 3, 5, 6, 7}) + "\n" + "; ".join(notes) + ".\n"


@result_table("simulate.estimate-scale", "scale.json", SCALE_CMD, needs="estimate", model=True)
def estimate_scale_markdown(data: dict[str, Any]) -> str:
    """The estimate engine's own cost as clients per round grow."""
    e = data["estimate"]
    rows = [[f"{r['clients_per_round']:,} of {r['clients_total']:,}", f"{fmt_s(r['plan_wall_s'])} / "
             f"{fmt_s(r['plan_cpu_s'])}", f"{fmt_s(r['estimate_wall_s'])} / {fmt_s(r['estimate_cpu_s'])}",
             fmt_s(r["plan_wall_s"] + r["estimate_wall_s"]), f"{r['load_average']:.1f}"] for r in e["rows"]]
    head = ["clients per round", "plan (wall / CPU)", "estimate engine (wall / CPU)", "total wall", "load"]
    if any("records_write_wall_s" in r for r in e["rows"]):
        head.append("records.jsonl (wall)")
        for row, r in zip(rows, e["rows"]):
            row.append(fmt_s(r["records_write_wall_s"]) if "records_write_wall_s" in r else "-")
    has_reference = any("reference_loop_s" in r for r in e["rows"])  # the machine's speed beside the run
    if has_reference:
        head.append("reference loop")
        for row, r in zip(rows, e["rows"]):
            row.append(fmt_s(r["reference_loop_s"]) if "reference_loop_s" in r else "-")
    if any("total_wall_s_runs" in r for r in e["rows"]):  # repeated side by side: the median run, every total
        head.append("every run's total")
        for row, r in zip(rows, e["rows"]):
            row.append(", ".join(fmt_s(t) for t in r.get("total_wall_s_runs", [])) or "-")
        where = f"the median of {e['rows'][0]['repeats']} runs side by side, "
    else:
        where = ""
    canary = (" *reference loop*: a fixed pure-Python loop (a sum over 10,000,000 integers) timed right before "
              "the median run; this VM's speed drifts, and the loop says how fast it was then."
              if has_reference else "")
    return (md_table(head, rows) + f"\nMeasured {where}{e['date']} on {e['machine']}.{canary}\n\n"
            + _estimate_verdict(e["rows"]))


#: issue 16: the estimate engine at 100,000 clients per round in under a second (plan + engine)
ESTIMATE_TARGET = (100_000, 1.0)


def _estimate_verdict(rows: list[dict[str, Any]]) -> str:
    n, limit = ESTIMATE_TARGET
    at = [r for r in rows if r["clients_per_round"] == n]
    if not at:
        return f"No row at {n:,} clients per round: the target (< {limit:g} s) was not tested.\n"
    wall = at[0]["plan_wall_s"] + at[0]["estimate_wall_s"]
    cpu = at[0]["plan_cpu_s"] + at[0]["estimate_cpu_s"]
    verdict = "met" if wall < limit else "not met"
    return (f"**Target** ({n:,} clients per round, plan + engine < {limit:g} s): {verdict} — {fmt_s(wall)} wall, "
            f"{fmt_s(cpu)} CPU, at load {at[0]['load_average']:.1f}.\n")


@result_table("simulate.setup", "scale.json", SCALE_CMD + " setup", needs="setup")
def simulate_setup_markdown(data: dict[str, Any]) -> str:
    """What a simulate run costs besides its rounds, per population (wall time only: the model plays no
    part), and at 10,000 the same run the way fedbw did it before, asking every node for its partition id."""
    c = data["setup"]
    rows = [[f"{r['clients_total']:,}", "asking every node (before)" if r["ask_nodes"] else "the engine's own map",
             fmt_s(r["total_wall_s"]), fmt_s(r["rounds_wall_s"]), fmt_s(r["outside_rounds_s"]),
             _gib(r["peak_rss_bytes"])] for r in c["runs"]]
    return (md_table(["clients in all", "node ↔ client", "run (wall)", "its rounds", "outside the rounds",
                      "peak RSS GiB"], rows, right={2, 3, 4, 5})
            + f"\n{c['clients_per_round']} clients per round, 2 rounds, synthetic compute (mlp); outside the rounds: "
              f"Ray's start, the Simulation Engine registering every node, the first round's actors, tear-down. "
              f"Measured {c['date']} on {c['machine']}.\n")
