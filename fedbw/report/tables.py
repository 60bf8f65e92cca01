"""Rich tables: plain, fixed columns, units in the header (nccl-tests' habit)."""

from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Sequence

from rich import box
from rich.table import Table

from fedbw.report.format import fmt_bytes, fmt_s, fmt_s_interval
from fedbw.results.records import ClientRoundRecord, RoundRecord


def new_table(title: str, columns: Sequence[str], left: Sequence[str] = (), wrap: Sequence[str] = ()) -> Table:
    """A compact table: no wrapping inside cells, first column and ``left`` columns left-aligned. ``wrap``:
    prose columns that fold onto more lines and give up their width first, so that a narrow terminal never
    cuts a key column (a name, a value) to an ellipsis."""
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, col in enumerate(columns):
        prose = col in wrap
        t.add_column(col, justify="left" if i == 0 or col in left or prose else "right", no_wrap=not prose,
                     overflow="fold" if prose else "ellipsis", ratio=1 if prose else None)
    return t


def fmt_frac(f: float, bound: bool) -> str:
    text = f"{100 * f:.0f} %"
    return f"[bold red]{text} ▲[/]" if bound else text


def profile_table(rows: Sequence, title: str) -> Table:
    t = new_table(title, ("profile", "Mbps up/down", "up/client", "down/client", "t_down", "t_compute", "t_up",
                          "framework", "round", "comm"))
    for r in rows:
        t.add_row(r.profile, f"{r.up_mbps:g}/{r.down_mbps:g}", fmt_bytes(r.bytes_up_per_client),
                  fmt_bytes(r.bytes_down_per_client), fmt_s(r.t_down_s), fmt_s(r.t_compute_s), fmt_s(r.t_up_s),
                  fmt_s(r.t_framework_s), fmt_s(r.round_time_s), fmt_frac(r.comm_fraction, r.bandwidth_bound))
    t.caption = ("framework = Flower's own time in the round (polls, a ClientApp process per message, the server's "
                 "work); comm = communication share of the round; ▲ above 30 % = bandwidth-bound")
    return t


def fabric_table(rows: Sequence, fl_round_s: float | None, title: str) -> Table:
    t = new_table(title, ("fabric", "ranks", "size", "algorithm", "time", "algbw GB/s", "busbw GB/s",
                          "FL round/this"), left=("algorithm",))
    for r in rows:
        ratio = f"{fl_round_s / r.time_s:,.0f}×" if fl_round_s and r.time_s > 0 else "-"
        t.add_row(r.fabric, str(r.ranks), fmt_bytes(r.size_bytes), r.algorithm, fmt_s(r.time_s),
                  f"{r.algbw_gbps:.2f}", f"{r.busbw_gbps:.2f}", ratio)
    return t


def fmt_host(r: RoundRecord) -> str:
    """The host's share of an emulated round, flagged ◆ when the round is host-bound."""
    if r.host is None:
        return "-"
    text = f"{100 * r.host.share:.0f} %"
    return f"[bold yellow]{text} ◆[/]" if r.host.bound else text


INTERVAL_CAPTION = ("round time = the expected round, and in brackets its 10th–90th percentile over Flower's "
                    "unknown poll phases and the calibration's intervals")
HOST_CAPTION = ("host = share of the round the emulating host, not the links, held (link idle mid-message, slow "
                "ClientApp starts); ◆ at 5 % or more = host-bound: the round measures this machine's CPUs — "
                "rerun with --dilation auto (docs/emulate.md)")


def host_summary(rounds: Sequence[RoundRecord]) -> str | None:
    """One line on host-bound rounds, or None when no round has a host record."""
    hosted = [r for r in rounds if r.host is not None]
    if not hosted:
        return None
    bound = [r.round for r in hosted if r.host is not None and r.host.bound]
    k = hosted[0].host.dilation if hosted[0].host is not None else 1.0
    capped = all(r.host is not None and r.host.cpu_capped for r in hosted)
    how = f"dilation {k:g}×" + (", devices CPU-capped" if capped else "") if k > 1 else "no dilation"
    if not bound:
        return f"host: no round host-bound ({how})"
    return (f"[yellow]host-bound[/]: {len(bound)} of {len(hosted)} rounds ({', '.join(map(str, bound))}) — the host "
            f"held ≥ 5 % of the round ({how}); rerun with --dilation auto (docs/emulate.md)")


def privacy_caption(rounds: Sequence[RoundRecord]) -> str | None:
    """What the ε column means: its sampling, adjacency and δ (an ε without them promises nothing)."""
    p = next((r.privacy for r in rounds if r.privacy is not None and r.epsilon is not None), None)
    if p is None:
        return None
    parts = [f"sampling {p.sampling}" if p.sampling else None, f"{p.adjacency} adjacency" if p.adjacency else None,
             f"δ = {p.delta:g}" if p.delta is not None else None]
    return "ε: " + ", ".join(x for x in parts if x) + " (docs/privacy.md)"


def rounds_table(rounds: Sequence[RoundRecord], title: str) -> Table:
    host = any(r.host is not None for r in rounds)
    cols = ["round", "clients", "round time [80 %]" if any(r.round_interval_s for r in rounds) else "round time", "comm", "comm time", "compute", "framework", "up total", "down total",
            "loss", "accuracy", "ε"] + (["host"] if host else [])
    t = new_table(title, cols)
    for r in rounds:
        t.add_row(str(r.round), str(r.num_clients), fmt_s_interval(r.round_time_s, r.round_interval_s),
                  fmt_frac(r.comm_fraction, r.bandwidth_bound),
                  fmt_s(r.comm_time_s), fmt_s(r.compute_time_s), fmt_s(r.framework_time_s),
                  fmt_bytes(r.bytes_up_total), fmt_bytes(r.bytes_down_total),
                  "-" if r.loss is None else f"{r.loss:.4f}", "-" if r.accuracy is None else f"{100 * r.accuracy:.1f} %",
                  "-" if r.epsilon is None else f"{r.epsilon:.3f}", *([fmt_host(r)] if host else []))
    captions = [c for c in (privacy_caption(rounds), HOST_CAPTION if host else None,
                            INTERVAL_CAPTION if any(r.round_interval_s for r in rounds) else None) if c]
    if captions:
        t.caption = "\n".join(captions)
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
