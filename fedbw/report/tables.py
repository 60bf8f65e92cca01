"""Rich tables: plain, fixed columns, units in the header (nccl-tests' habit)."""

from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Sequence

from rich import box
from rich.table import Table

from fedbw.report.format import fmt_bytes, fmt_s
from fedbw.results.records import ClientRoundRecord, RoundRecord


def new_table(title: str, columns: Sequence[str], left: Sequence[str] = ()) -> Table:
    """A compact table: no wrapping inside cells, first column and ``left`` columns left-aligned."""
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, col in enumerate(columns):
        t.add_column(col, justify="left" if i == 0 or col in left else "right", no_wrap=True)
    return t


def fmt_frac(f: float, bound: bool) -> str:
    text = f"{100 * f:.0f} %"
    return f"[bold red]{text} ▲[/]" if bound else text


def profile_table(rows: Sequence, title: str) -> Table:
    t = new_table(title, ("profile", "Mbps up/down", "up/client", "down/client", "t_down", "t_compute", "t_up",
                          "round", "comm"))
    for r in rows:
        t.add_row(r.profile, f"{r.up_mbps:g}/{r.down_mbps:g}", fmt_bytes(r.bytes_up_per_client),
                  fmt_bytes(r.bytes_down_per_client), fmt_s(r.t_down_s), fmt_s(r.t_compute_s), fmt_s(r.t_up_s),
                  fmt_s(r.round_time_s), fmt_frac(r.comm_fraction, r.bandwidth_bound))
    t.caption = "comm = communication share of the round; ▲ above 30 % = bandwidth-bound"
    return t


def fabric_table(rows: Sequence, fl_round_s: float | None, title: str) -> Table:
    t = new_table(title, ("fabric", "ranks", "size", "algorithm", "time", "algbw GB/s", "busbw GB/s",
                          "FL round/this"), left=("algorithm",))
    for r in rows:
        ratio = f"{fl_round_s / r.time_s:,.0f}×" if fl_round_s and r.time_s > 0 else "-"
        t.add_row(r.fabric, str(r.ranks), fmt_bytes(r.size_bytes), r.algorithm, fmt_s(r.time_s),
                  f"{r.algbw_gbps:.2f}", f"{r.busbw_gbps:.2f}", ratio)
    return t


def rounds_table(rounds: Sequence[RoundRecord], title: str) -> Table:
    t = new_table(title, ("round", "clients", "round time", "comm", "compute", "up total", "down total", "loss",
                          "accuracy", "ε"))
    for r in rounds:
        t.add_row(str(r.round), str(r.num_clients), fmt_s(r.round_time_s), fmt_frac(r.comm_fraction, r.bandwidth_bound),
                  fmt_s(r.compute_time_s), fmt_bytes(r.bytes_up_total), fmt_bytes(r.bytes_down_total),
                  "-" if r.loss is None else f"{r.loss:.4f}", "-" if r.accuracy is None else f"{100 * r.accuracy:.1f} %",
                  "-" if r.epsilon is None else f"{r.epsilon:.3f}")
    return t


def by_profile_table(clients: Sequence[ClientRoundRecord], title: str) -> Table:
    """Mean per client and round, grouped by link profile: where each profile's time goes."""
    groups: dict[str, list[ClientRoundRecord]] = defaultdict(list)
    for c in clients:
        if not c.dropped:
            groups[c.profile].append(c)
    t = new_table(title, ("profile", "n", "up/client", "down/client", "t_down", "t_compute", "t_up", "t_framework",
                          "client time"))
    for name in sorted(groups):
        g = groups[name]
        t.add_row(name, str(len(g)), fmt_bytes(mean(c.bytes_up for c in g)), fmt_bytes(mean(c.bytes_down for c in g)),
                  fmt_s(mean(c.t_down_s for c in g)), fmt_s(mean(c.t_compute_s for c in g)),
                  fmt_s(mean(c.t_up_s for c in g)), fmt_s(mean(c.t_framework_s for c in g)),
                  fmt_s(mean(c.t_total_s for c in g)))
    return t


def catalog_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    t = new_table(title, columns, left=("description", "scope", "input"))
    for row in rows:
        t.add_row(*row)
    return t
