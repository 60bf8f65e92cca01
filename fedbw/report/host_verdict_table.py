"""docs/emulate.md's table of the host verdict with each device's own CPU split out (benchmarks/host_verdict.py):
validation 5's row whose every round was host-bound, again at its dilation and under-dilated as a control."""

from __future__ import annotations

import statistics
from typing import Any

from fedbw.report.doc_blocks import md_table, result_table
from fedbw.report.format import fmt_pct, fmt_s

COMMAND = ".venv/bin/python benchmarks/host_verdict.py"
#: What each row of benchmarks/host_verdict.py's ROWS is, in the table's caption
ROW_WORDS = {"1M-home-80-2": "`params=1M`, about 600 objects a message, 2 clients on home-80",
             "3M-home-30-2": "`params=3M`, 2 clients on home-30",
             "1M-mobile-5g-4": "`params=1M`, about 600 objects a message, 4 clients on mobile-5g",
             "1M-home-50-8-secagg": "`params=1M`, about 600 objects a message, 8 clients on home-50 under SecAgg+"}


def _share(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _busy(payloads: list[dict[str, Any]], key: str = "device_busy") -> str:
    """A group's CPU use over the payloads that have idle time (median share of its cap; n unknown): the
    client device's (``device_busy``) or the server's (``server_busy``)."""
    idle = [p for p in payloads if (p.get("idle_s") or 0.0) > 0]
    known = [p[key] for p in idle if p.get(key) is not None]
    unknown = len(idle) - len(known)
    text = f"{statistics.median(known):.2f}" if known else "-"
    return text + (f" ({unknown} of {len(idle)} unknown)" if unknown else "")


def _flight(payloads: list[dict[str, Any]]) -> str:
    """The share of the payloads' idle link time in which the next request was crossing the other way."""
    idle = sum(p.get("idle_s") or 0.0 for p in payloads)
    if idle <= 0 or all(p.get("request_flight_s") is None for p in payloads):
        return "-"
    return fmt_pct(sum(p.get("request_flight_s") or 0.0 for p in payloads) / idle)


@result_table("emulate.host-verdict", "host-verdict.json", COMMAND, needs="runs")
def host_verdict_markdown(data: dict[str, Any]) -> str:
    """One line per round of each run: the host's share (what the verdict counts), the devices' and the
    server's own idle time beside it, how busy the host's CPUs were, and per run the requests' flight and
    the devices' and the server's CPU use over the payloads."""
    head = ["run", "round", "round time", "host's share", "host-bound", "devices' own idle", "server's own idle",
            "host CPUs busy",
            "all host CPUs busy", "idle link with a request in flight", "devices' CPU over their payloads "
            "(share of cap, median)", "server's CPU over them"]
    rows = []
    for run in data["runs"]:
        if run.get("error"):
            rows.append([f"dilation {run['dilation']:g}", "-", f"failed: {run['error']}"] + [""] * (len(head) - 3))
            continue
        per_run = [_flight(run["payloads"]), _busy(run["payloads"]), _busy(run["payloads"], "server_busy")]
        for r in run["rounds"]:
            first = r["round"] == run["rounds"][0]["round"]
            rows.append([f"dilation {run['dilation']:g}", str(r["round"]), fmt_s(r["round_time_s"]),
                         _share(r["host_share"]), "yes" if r["host_bound"] else "no",
                         "-" if r["device_bound_s"] is None else fmt_s(r["device_bound_s"]),
                         "-" if r.get("server_bound_s") is None else fmt_s(r["server_bound_s"]),
                         fmt_pct(r["cpu_busy"]), fmt_pct(r.get("cpu_saturated")),
                         *(per_run if first else [""] * len(per_run))])
    for t in data["validation_trials"]:
        for i, (share, bound, cpu) in enumerate(zip(t["host_shares"], t["host_bound"], t["cpu_busy"]), 1):
            rows.append([f"validation {data['validation']}, trial {t['trial']} (dilation {t['dilation']:g}, before "
                         "the split)", str(i), "", _share(share), "yes" if bound else "no", "", "",
                         fmt_pct(cpu), "", "", "", ""])
    return (md_table(head, rows)
            + f"\nRow `{data['row']}` of validation {data['validation']} ({ROW_WORDS.get(data['row'], data['row'])}, "
              f"synthetic compute). Every figure is emulate's own; the host's share is the "
              f"host's part of the critical path's time over the round, host-bound at 5 %; a payload's idle link "
              f"less the time its next request was in flight the other way (the link's own), split by the device's "
              f"CPU use over it (share of its cap), then the server's, the rest the host's; \"all host CPUs "
              f"busy\": the share of the round in sampling intervals with every core ≥ 95 % busy, the most the "
              f"host can have starved anything. Ran "
              f"{data['started_utc']} – {data['ended_utc']} on {data['cpu']} ({data['machine']}), commit "
              f"{data['commit']}.\n")


#: The other rows' blocks in docs/emulate.md: each its own result, host-verdict-<row>.json (``--row``)
for _row, _block in (("3M-home-30-2", "emulate.host-verdict-3m"), ("1M-mobile-5g-4", "emulate.host-verdict-1m-mobile"),
                     ("1M-home-50-8-secagg", "emulate.host-verdict-1m-8-secagg")):
    result_table(_block, f"host-verdict-{_row}.json", f"{COMMAND} --row {_row}", needs="runs")(host_verdict_markdown)
