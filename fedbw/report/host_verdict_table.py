"""docs/emulate.md's table of the host verdict with each device's own CPU split out (benchmarks/host_verdict.py):
validation 5's row whose every round was host-bound, again at its dilation and under-dilated as a control."""

from __future__ import annotations

import statistics
from typing import Any

from fedbw.report.doc_blocks import md_table, result_table
from fedbw.report.format import fmt_pct, fmt_s

COMMAND = ".venv/bin/python benchmarks/host_verdict.py"


def _share(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _busy(payloads: list[dict[str, Any]]) -> str:
    """The devices' CPU use over their payloads that have idle time (median share of the cap; n unknown)."""
    idle = [p for p in payloads if (p.get("idle_s") or 0.0) > 0]
    known = [p["device_busy"] for p in idle if p.get("device_busy") is not None]
    unknown = len(idle) - len(known)
    text = f"{statistics.median(known):.2f}" if known else "-"
    return text + (f" ({unknown} of {len(idle)} unknown)" if unknown else "")


@result_table("emulate.host-verdict", "host-verdict.json", COMMAND, needs="runs")
def host_verdict_markdown(data: dict[str, Any]) -> str:
    """One line per round of each run: the host's share (what the verdict counts), the devices' own idle time
    beside it, how busy the host's CPUs were, and the devices' CPU use over their payloads."""
    head = ["run", "round", "round time", "host's share", "host-bound", "devices' own idle", "host CPUs busy",
            "all host CPUs busy", "devices' CPU over their payloads (share of cap, median)"]
    rows = []
    for run in data["runs"]:
        if run.get("error"):
            rows.append([f"dilation {run['dilation']:g}", "-", f"failed: {run['error']}"] + [""] * (len(head) - 3))
            continue
        busy = _busy(run["payloads"])
        for r in run["rounds"]:
            rows.append([f"dilation {run['dilation']:g}", str(r["round"]), fmt_s(r["round_time_s"]),
                         _share(r["host_share"]), "yes" if r["host_bound"] else "no",
                         "-" if r["device_bound_s"] is None else fmt_s(r["device_bound_s"]),
                         fmt_pct(r["cpu_busy"]), fmt_pct(r.get("cpu_saturated")),
                         busy if r["round"] == run["rounds"][0]["round"] else ""])
    for t in data["validation_trials"]:
        for i, (share, bound, cpu) in enumerate(zip(t["host_shares"], t["host_bound"], t["cpu_busy"]), 1):
            rows.append([f"validation {data['validation']}, trial {t['trial']} (dilation {t['dilation']:g}, before "
                         "the split)", str(i), "", _share(share), "yes" if bound else "no", "",
                         fmt_pct(cpu), "", ""])
    return (md_table(head, rows)
            + f"\nRow `{data['row']}` of validation {data['validation']} (`params=1M`, about 600 objects a message, "
              f"2 clients on home-80, synthetic compute). Every figure is emulate's own; the host's share is the "
              f"host's part of the critical path's time over the round, host-bound at 5 %; \"all host CPUs "
              f"busy\": the share of the round in sampling intervals with every core ≥ 95 % busy, the most the "
              f"host can have starved anything. Ran "
              f"{data['started_utc']} – {data['ended_utc']} on {data['cpu']} ({data['machine']}), commit "
              f"{data['commit']}.\n")
