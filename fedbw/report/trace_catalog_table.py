"""docs/traces.md's table of shipped traces: each stand-in's mean and percentiles beside the measured
trace whose statistics it was drawn from, from benchmarks/traces.py's JSON (issue 32.3)."""

from __future__ import annotations

from typing import Any

from fedbw.report.doc_blocks import md_table, result_table


def _rates(stats: dict[str, float]) -> str:
    return f"{stats['mean_mbps']:.3g} [{stats['p10_mbps']:.3g}–{stats['p90_mbps']:.3g}]"


@result_table("traces.shipped", "traces.json", ".venv/bin/python benchmarks/traces.py")
def shipped_markdown(data: dict[str, Any]) -> str:
    head = ["trace", "direction", "source: mean [p10–p90] Mbps", "stand-in: mean [p10–p90] Mbps",
            "log-rate sd", "lag-1 correlation (1 s)", "out", "source"]
    body = []
    for row in data["traces"]:
        for d in ("up", "down"):
            shape = row["shape"][d]
            body.append([row["name"] if d == "up" else "", d, _rates(row["source_stats"][d]), _rates(row["stats"][d]),
                         f"{shape['log_sd']:.2f}", f"{shape['ac1']:.2f}", f"{100 * shape['outage_share']:.1f} %",
                         row["source"].split(" from ")[0] if d == "up" else ""])
    stamp = min(row["measured_utc"] for row in data["traces"]) if data["traces"] else "-"
    return (md_table(head, body) + f"\nStatistics measured {stamp} from mahimahi's traces (not shipped); stand-ins "
            f"drawn {data['date']} ({data['machine']}).\n")
