"""docs/privacy-overhead.md, "At scale", cell by cell: what each privacy variant costs in one cell of the
privacy-at-scale study, on its first profile — bytes per stage, link time, Flower's time, the server's CPU,
the round with its interval, and whether Flower completes it (issue 34.1's columns), from the study.json it
wrote (``benchmarks/results/privacy-at-scale.json``).

The overview table beside it (:mod:`fedbw.report.privacy_scale_table`) gives ratios only; this one gives
the figures the ratios come from, so a reader can see *where* a variant's time goes."""

from __future__ import annotations

from typing import Any

from fedbw.report.doc_blocks import md_table, result_table
from fedbw.report.format import fmt_bytes, fmt_pct, fmt_s, fmt_s_interval
from fedbw.report.privacy_scale_table import SCALE_CMD, row_kind

#: The framework parts that are the server's CPU: FedAvg's aggregation and SecAgg+'s server crypto (which
#: the deployment clock charges after each stage as ``server_extra_s``; the unmasking is most of it).
SERVER_CPU_PARTS = ("server_aggregate_s", "server_extra_s")
#: How the stages read in a narrow column (Flower's SecAgg+ stage names are long).
STAGE_SHORT = {"setup": "setup", "share_keys": "keys", "collect_masked_vectors": "masked", "unmask": "unmask"}


def _stages_up(row: dict[str, Any]) -> str:
    """The uplink bytes per stage, 'setup 1.04 kB · keys 1.86 kB · masked 1.10 MB · unmask 805 B'; '-' for a
    single-stage round (its upload is the up/client column) or a file from before the column."""
    stages = row.get("bytes_per_stage") or {}
    if len(stages) < 2:
        return "-"
    return " · ".join(f"{STAGE_SHORT.get(stage, stage)} {fmt_bytes(up)}" for stage, (_, up) in stages.items())


def _server_cpu(row: dict[str, Any]) -> str:
    """Aggregation + SecAgg+'s server crypto in the steady round, 'aggregation / SecAgg+' when both."""
    parts = row.get("framework_parts_s") or {}
    agg, crypto = (parts.get(k, 0.0) for k in SERVER_CPU_PARTS)
    return fmt_s(agg) if not crypto else f"{fmt_s(agg)} + {fmt_s(crypto)}"


def _completes(row: dict[str, Any]) -> str:
    value = row.get("round_completes")
    return "always" if value is None else fmt_pct(value)


@result_table("privacy.at-scale-cells", "privacy-at-scale.json", SCALE_CMD, needs="grid", model=True)
def privacy_cells_markdown(data: dict[str, Any]) -> str:
    """One line per (cell, variant) on the study's first profile: the bytes and times behind the overview's
    ratios."""
    profile = data["profiles"][0]
    grid: dict[str, list[Any]] = data["grid"]
    baseline = data.get("baseline", "plain")
    rows = []
    for r in data["rows"]:
        if r["profile"] != profile:
            continue
        ratio = r.get("round_ratio")
        rows.append([*(str(r["cell"].get(k)) for k in grid), row_kind(r), fmt_bytes(r["bytes_up_per_client"]),
                     fmt_bytes(r["bytes_down_per_client"]), _stages_up(r), fmt_s(r["comm_time_s"]),
                     fmt_s(r.get("framework_time_s")), _server_cpu(r),
                     fmt_s_interval(r["round_time_s"], r.get("round_interval_s")),
                     "-" if ratio is None else f"{ratio:.2f}×", _completes(r)])
    rows.sort(key=lambda line: tuple(_order(grid, k, v) for k, v in zip(grid, line)))
    head = [*grid, "variant", "up/client", "down/client", "up by stage", "link", "Flower", "server CPU",
            "round", f"vs {baseline}", "completes"]
    return (md_table(head, rows, right=set(range(len(grid) + 1, len(head))) - {len(grid) + 3})
            + f"\nOn {profile}, every sampled client on it; steady-round means per sampled client. up by stage: "
              "SecAgg+'s four stages (setup, key and share exchange, masked vector, unmask); link: communication on "
              "the round's critical path; Flower: its own time in the round (polls, ClientApp starts, the "
              "server's pulls and work); server CPU: FedAvg's aggregation, + SecAgg+'s server crypto (the "
              "unmasking, most of it); round: median of the steady round with its central 80 % interval; "
              "completes: the chance Flower finishes a round whose dropped clients leave some node with fewer "
              "than the threshold of share holders (Flower 1.42's rule; the estimate engine times the round as "
              "if it finished). The cohorts above 40 clients and the shares above 17 extrapolate the SecAgg+ "
              "cost model beyond what ran on this machine (\"The SecAgg+ model against real rounds\").\n")


def _order(grid: dict[str, list[Any]], key: str, text: str) -> int:
    """A grid value's place in the study file's own order (the lines sort by cell as the grid lists them)."""
    values = [str(v) for v in grid[key]]
    return values.index(text) if text in values else len(values)

