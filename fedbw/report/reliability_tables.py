"""docs/reliability.md's tables: what the hardening tests tried and kept (tests/hardening writes
reliability.json), the shaper's CPU targets (benchmarks/shaper.py --out shaper-cpu.json) and the soak
(benchmarks/soak.py, or the CI soak in tests/hardening/test_soak.py). Registered in doc_tables.py.
"""

from __future__ import annotations

from typing import Any

from fedbw.report.doc_blocks import md_table
from fedbw.report.format import fmt_s

RELIABILITY_CMD = ("FEDBW_RELIABILITY_OUT=benchmarks/results/reliability.json "
                   ".venv/bin/python -m pytest -q tests/hardening")
SHAPER_CPU_CMD = (".venv/bin/python benchmarks/shaper.py --only 30x32,80x1 --no-kernel --repeat 3 "
                  "--baseline-src /tmp/fedbw-shaper-base --also-quantum-ms 5 --perf-counts "
                  "--out benchmarks/results/shaper-cpu.json")
SOAK_CMD = ".venv/bin/python benchmarks/soak.py"


def _measured_text(measured: dict[str, Any]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in measured.items()) or "-"


def cases_markdown(data: dict[str, Any]) -> str:
    """One row per hardening test: area, what was tried, what was kept, what it measured, its outcome."""
    def kept(c: dict[str, Any]) -> str:  # what a test that did not pass was after is a target, not a result
        return c.get("kept", "") if c.get("outcome") == "passed" else f"*not shown ({c.get('outcome')})*: {c.get('kept')}"

    rows = [[c.get("area") or "-", c.get("tried", ""), kept(c), _measured_text(c.get("measured") or {}),
             f"{c.get('outcome', '?')} ({c.get('run_utc', '?')[:10]}, {c.get('duration_s', 0):.0f} s)",
             f"`{c['id'].split('::', 1)[-1]}`"] for c in data["cases"]]
    m = data.get("machine", {})
    return (md_table(["area", "tried", "kept", "measured", "outcome", "test"], rows, right=set())
            + f"\nTests in tests/hardening/; file updated {data.get('updated_utc', '?')} on {m.get('cpu', '?')}, "
              f"{m.get('cores', '?')} cores, Python {m.get('python', '?')}.\n")


def shaper_cpu_markdown(data: dict[str, Any]) -> str:
    """The shaper's CPU targets: median proxy CPU over the repeats, this tree beside the baseline."""
    targets = {(30, 32): 25.0, (80, 1): 6.0}
    rows = []
    for m in data["medians"]:
        bound = targets.get((m["rate"], m["clients"]))
        if bound is None or m["shaper_tree"] != "current":
            verdict = "-"
        elif m["goodput_pct_median"] < 99.0:  # the host did not drive the links: CPU would read low
            verdict = f"not judged (goodput {m['goodput_pct_median']:.0f} %)"
        else:
            verdict = "met" if m["cpu_pct_core_median"] <= bound else "**missed**"
        rows.append([m["shaper_tree"], f"{m['clients']} × {m['rate']} Mbps", str(m["trials"]),
                     f"{m['cpu_pct_core_median']:.1f} %", " / ".join(f"{v:.1f}" for v in m["cpu_pct_core_all"]),
                     f"{m['cpu_pct_core_per_full_rate_median']:.1f} %",
                     "-" if bound is None else f"≤ {bound:g} %", verdict, f"{m['goodput_pct_median']:.2f} %",
                     f"{m['window_pct_min']:.1f}–{m['window_pct_max']:.1f} %", _kernel_share(m),
                     _syscalls(m), f"{m['loadavg_1m_median']:.1f}"])
    mach = data.get("machine", {})
    return (md_table(["shaper", "links", "trials", "CPU % of a core (median)", "each trial", "per full rate",
                      "target", "verdict", "goodput", "0.5 s windows", "in the kernel", "syscalls / s",
                      "host load (1 min)"], rows, right=set(range(2, 13)))
            + f"\nRun {data.get('started', '?')} on {mach.get('cpu', '?')}, {mach.get('cores', '?')} cores, uvloop "
              f"{mach.get('uvloop', '-')}; the shaper as its own process (`python -m fedbw.shaper.service`, its "
              "link-series sampler on, 4 connections per link, 10 ms latency), rows of both trees alternating. "
              "*per full rate*: CPU ÷ goodput, what the row would cost if the host had driven its links fully "
              "(an extrapolation, shown beside the measured figure). A verdict needs the links driven fully "
              "(goodput ≥ 99 %) and uses the measured figure. *in the kernel*: system ÷ (user + system) CPU "
              "time (medians); *syscalls / s*: counted by `perf stat` (`--perf-counts`), where it ran.\n")


def _kernel_share(m: dict[str, Any]) -> str:
    """How much of the proxy's CPU is system time: the part no Python change can remove."""
    user, system = m.get("cpu_user_pct_core_median"), m.get("cpu_sys_pct_core_median")
    return "-" if user is None or system is None or user + system <= 0 else f"{100.0 * system / (user + system):.0f} %"


def _syscalls(m: dict[str, Any]) -> str:
    calls = (m.get("events_per_s_median") or {}).get("syscalls")
    return "-" if calls is None else f"{calls:,.0f}"


def _rounds_run(data: dict[str, Any]) -> str:
    """The soak's rounds: "20", or "12 of 20" for a soak stopped before its end."""
    if data.get("status", "complete") == "complete":
        return str(data["rounds"])
    return f"{len(data['per_round'])} of {data['rounds']}"


def soak_markdown(data: dict[str, Any]) -> str:
    """The soak: per round, what the run's processes held; then what was left."""
    mib = 2 ** 20
    rows = [[str(r["round"]), fmt_s(r["t_s"]), str(r["processes"]), str(r["fds"]), str(r["threads"]),
             f"{r['rss_bytes'] / mib:.0f}", f"{r['rss_long_lived_bytes'] / mib:.0f}", str(r["own_fds"]),
             str(r["own_threads"])] for r in data["per_round"]]
    a, b = data["after"], data["before"]
    rows.append(["after", "-", str(a["processes"]), str(a["fds"]), str(a["threads"]), f"{a['rss_bytes'] / mib:.0f}",
                 f"{a['rss_long_lived_bytes'] / mib:.0f}", f"{a['own_fds']} (start {b['own_fds']})",
                 f"{a['own_threads']} (start {b['own_threads']})"])
    v = data["verdicts"]
    growth = v.get("rss_growth_round2_to_last")
    mach = data.get("machine", {})
    return (md_table(["round", "at", "processes", "fds", "threads", "RSS MiB", "long-lived MiB", "fedbw fds",
                      "fedbw threads"], rows)
            + f"\n{data['clients']} clients × {_rounds_run(data)} rounds, SecAgg+, dilation {data['dilation']}, "
              f"{fmt_s(data['wall_s'])} in all; long-lived memory grew "
              f"{'-' if growth is None else f'{100 * growth:+.1f} %'} from round 2 to the last (bound "
              f"{100 * v['rss_growth_bound']:.0f} %); verdict: {'no leak' if v['ok'] else '**leak or growth**'}. "
              f"Run {data.get('started', '?')}, {mach.get('cores', '?')} cores, load "
              f"{(mach.get('loadavg_start') or [0])[0]:.1f} at the start."
            + ("" if data.get("status", "complete") == "complete"
               else f" Stopped early ({data['status']}): {data.get('stopped') or 'killed mid-run'}.") + "\n")


# ------------------------------------------------------------------------------------------------------------
# issue 16: docs/simulate.md's scale tables (data from benchmarks/scale.py); report/scale_tables.py registers them
import fedbw.report.scale_tables  # noqa: E402,F401


#: (block name, result file, command that writes it, key it needs, renderer)
TABLES = [
    ("reliability.cases", "reliability.json", RELIABILITY_CMD, "cases", cases_markdown),
    ("reliability.shaper-cpu", "shaper-cpu.json", SHAPER_CPU_CMD, "medians", shaper_cpu_markdown),
    ("reliability.soak", "soak.json", SOAK_CMD, "per_round", soak_markdown),
]
