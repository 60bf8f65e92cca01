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


@result_table("simulate.scale", "scale.json", SCALE_CMD, needs="sim1000")
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
                         f"{_gib(r['peak_rss_bytes'])} ({_gib(mem['driver'])} / {_gib(mem['ray actors'])} / "
                         f"{_gib(mem['ray system'])})",
                         f"{cpu['driver']:.0f} / {cpu['ray actors']:.0f} / {cpu['ray system']:.0f}",
                         f"{r['load_average'][0]:.1f}"])
        if "fedbw_share" in c:
            notes.append(f"at {c['fedbw']['clients_per_round']:,} clients per round fedbw's measurement is "
                         f"{100 * c['fedbw_share']:.0f} % of the steady round (fedbw vs bare, side by side)")
        notes.append(f"{c['fedbw']['clients_per_round']:,}: measured {c['date']} on {c['machine']}")
    head = ["clients per round", "run", "steady round", "per client", "rounds", "peak RSS GiB (driver / actors / Ray)",
            "CPU s (driver / actors / Ray)", "load"]
    return md_table(head, rows, right={2, 3, 5, 6, 7}) + "\n" + "; ".join(notes) + ".\n"


@result_table("simulate.estimate-scale", "scale.json", SCALE_CMD, needs="estimate")
def estimate_scale_markdown(data: dict[str, Any]) -> str:
    """The estimate engine's own cost as clients per round grow."""
    e = data["estimate"]
    rows = [[f"{r['clients_per_round']:,} of {r['clients_total']:,}", f"{fmt_s(r['plan_wall_s'])} / "
             f"{fmt_s(r['plan_cpu_s'])}", f"{fmt_s(r['estimate_wall_s'])} / {fmt_s(r['estimate_cpu_s'])}",
             fmt_s(r["plan_wall_s"] + r["estimate_wall_s"]), f"{r['load_average']:.1f}"] for r in e["rows"]]
    return (md_table(["clients per round", "plan (wall / CPU)", "estimate engine (wall / CPU)", "total wall", "load"],
                     rows) + f"\nMeasured {e['date']} on {e['machine']}.\n")
