"""The ServerApp's log → what went wrong in a run Flower still calls "completed" (halted SecAgg+ rounds,
failed clients, too few nodes), for the run's issues."""

from __future__ import annotations

import re


def server_log_issues(server_log: str) -> list[str]:
    """Failures a ServerApp logs while Flower still calls the run "completed": halted SecAgg+ rounds,
    rounds with failed clients."""
    issues, rnd = [], "?"
    for line in server_log.splitlines():
        if (m := re.search(r"\[ROUND (\d+)\]", line)) is not None:
            rnd = m.group(1)
        elif "Secure aggregation halted" in line:
            issues.append(f"round {rnd}: SecAgg+ halted (too few clients survived to unmask the sum)")
        elif (m := re.search(r"aggregate_fit: received (\d+) results and (\d+) failures", line)) and int(m.group(2)):
            issues.append(f"round {rnd}: {m.group(2)} client(s) failed, {m.group(1)} result(s) aggregated")
        elif "Insufficient available nodes" in line:
            issues.append(f"round {rnd}: {line.split(':', 1)[-1].strip()}")
    return issues
