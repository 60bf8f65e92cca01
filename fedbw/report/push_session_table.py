"""docs/emulate.md's table of Flower's object-push session against SecAgg+'s one-object masked vector
(benchmarks/push_session.py): measured by emulate alone, so it checks Flower's behaviour, not fedbw's model."""

from __future__ import annotations

import statistics
from typing import Any

from fedbw.report.doc_blocks import md_table, result_table

COMMAND = ".venv/bin/python benchmarks/push_session.py"


def _case_row(case: dict[str, Any], ttl_s: float) -> list[str]:
    ups = case.get("uploads") or []
    if not ups:
        return [f"{case['share']:.2f}", f"{case['up_mbps']:.2f} Mbps", "-", "-",
                f"no measured upload ({case.get('error') or 'the run left no emulate.json'})"]
    t = statistics.median(u["t_up_s"] for u in ups)
    lost = sum(u["lost"] for u in ups)
    why = next((u["error"] for u in ups if u["lost"]), None)
    verdict = f"{lost} of {len(ups)}" + (f": {why}" if why else "")
    return [f"{case['share']:.2f}", f"{case['up_mbps']:.2f} Mbps",
            f"{statistics.median(u['bytes_up'] for u in ups) / 1000:,.1f} kB",
            f"{t:.1f} s ({t / ttl_s:.2f}×)", verdict]


@result_table("emulate.push-session", "push-session.json", COMMAND, needs="cases")
def push_session_markdown(data: dict[str, Any]) -> str:
    """One row per uplink: the masked vector's time on the link against the session's lifetime, and how many
    of the clients' masked vectors Flower answered with an error instead of storing."""
    ttl = float(data["session_ttl_s"])
    rows = [_case_row(c, ttl) for c in data["cases"]]
    return (md_table(["share of the session asked", "uplink (line rate)", "masked vector delivered (median)",
                      "its time on the link (median; × the session)", "replies lost"], rows)
            + "\nThe uplink's bytes and time are the largest burst on it, as the shaper delivered it; where the "
              "replies were lost the ServerApp gave up on them once the session ended and the run ended with the "
              "upload still under way, so fewer bytes arrived than the masked vector holds.\n"
            + f"\nflwr {data['flwr']}, session {ttl:.0f} s; {data['model']} with stock SecAgg+, {data['clients']} "
              f"clients, one round, dilation {data['dilation']}; {data['made_utc']}, {data['machine']}. "
              f"`{COMMAND}`.\n")
