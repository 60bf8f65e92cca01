"""Rich tables: plain, fixed columns, units in the header (nccl-tests' habit)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import mean
from typing import TYPE_CHECKING, Sequence

from rich import box
from rich.cells import cell_len
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from fedbw.report.round_policy import availability_caption, late_caption, shows_used, used_cell
from fedbw.report.format import fmt_bytes, fmt_s, fmt_s_interval
from fedbw.results.records import ClientRoundRecord, RoundRecord

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult


@dataclass(frozen=True)
class Col:
    """A column of a :class:`FitTable`. ``key``: never cut (its header and every cell stay whole; the table
    drops other columns first); ``wrap``: prose that folds onto more lines at its words (it needs only its
    widest word, so it fits where a column on one line would have to go); ``left``: left-aligned (the first
    column always is); ``name``: what the caption calls the column when it is left out (default: its header
    on one line; give one where two headers read alike, as nccl-tests' out-of-place and in-place "busbw")."""

    header: str
    key: bool = False
    wrap: bool = False
    left: bool = False
    name: str = ""

    @property
    def called(self) -> str:
        return self.name or " ".join(self.header.split())


def _plain(cell: str) -> str:
    return Text.from_markup(cell).plain


def text_widths(cell: str) -> tuple[int, int]:
    """(widest word, widest line) of a cell written in Rich markup: the narrowest it can wrap to without
    cutting a word, and its width on one line."""
    plain = _plain(cell)
    lines = plain.splitlines() or [""]
    words = plain.split()
    widest = max(cell_len(line) for line in lines)
    return (max(cell_len(w) for w in words) if words else widest), widest


def spread_widths(mins: Sequence[int], maxs: Sequence[int], room: int) -> list[int]:
    """Column widths between each column's minimum and maximum that sum to at most ``room`` where they can:
    the widest columns that can give give first, one character at a time."""
    widths = list(maxs)
    excess = sum(widths) - room
    while excess > 0:
        can = [i for i, (w, lo) in enumerate(zip(widths, mins)) if w > lo]
        if not can:
            break
        i = max(can, key=lambda j: widths[j])
        widths[i] -= 1
        excess -= 1
    return widths


def _frame(title: str | None, caption: str | None = None) -> Table:
    return Table(title=title, title_justify="left", caption=caption, caption_justify="left", box=box.SIMPLE_HEAD,
                 pad_edge=False)


def table_overhead(columns: int) -> int:
    """Characters a table of ``columns`` columns adds to its cells' widths (padding, box edges): what
    :func:`_frame` draws, measured once per column count from Rich itself."""
    if columns not in _OVERHEAD:
        import io

        from rich.console import Console

        probe = _frame(None)
        for _ in range(columns):
            probe.add_column("", width=1)
        console = Console(width=10_000, file=io.StringIO())
        _OVERHEAD[columns] = Measurement.get(console, console.options, probe).maximum - columns
    return _OVERHEAD[columns]


_OVERHEAD: dict[int, int] = {}


class FitTable:
    """A table that picks its columns when it is printed, for the width it is printed at: key columns are
    never cut to "…"; the others leave, least important first (``drop``: headers, or tuples of headers that
    go together, in the order they go; a column of nothing but "-" goes before any other), until the key
    columns and what is left fit whole; a dropped column that fits again after a bigger one left comes back.
    The caption then names what was left out and where to read it (``left_out``). Where even the key columns
    alone are wider than the terminal, every column folds onto more lines: nothing is lost, nothing cut."""

    def __init__(self, title: str, columns: Sequence[Col], drop: Sequence[str | tuple[str, ...]] = (),
                 caption: str | None = None, left_out: str = "") -> None:
        self.title, self.columns, self.caption, self.left_out = title, list(columns), caption, left_out
        headers = [c.header for c in self.columns]
        units = [(u,) if isinstance(u, str) else tuple(u) for u in drop]
        listed = {h for u in units for h in u}
        if unknown := listed - set(headers):
            raise ValueError(f"drop names no column: {sorted(unknown)}")
        if keyed := listed & {c.header for c in self.columns if c.key}:
            raise ValueError(f"key columns never drop: {sorted(keyed)}")
        # columns neither key nor listed go last, the rightmost first
        units += [(c.header,) for c in reversed(self.columns) if not c.key and c.header not in listed]
        self._units = [tuple(headers.index(h) for h in u) for u in units]
        self.rows: list[list[str]] = []

    def add_row(self, *cells: str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def _bounds(self, i: int) -> tuple[int, int]:
        """(narrowest, widest) column ``i`` can be drawn at: a key or plain column's widest text, a prose
        column's widest word."""
        col = self.columns[i]
        widths = [text_widths(c) for c in [col.header, *(r[i] for r in self.rows)]]
        widest = max(w for _, w in widths)
        return (max(m for m, _ in widths) if col.wrap else widest), widest

    def choose(self, width: int) -> tuple[list[int], list[int], list[int] | None]:
        """For ``width`` terminal columns: (kept column indices, dropped ones, their widths or None where
        even the key columns do not fit)."""
        bounds = [self._bounds(i) for i in range(len(self.columns))]
        kept = set(range(len(self.columns)))

        def need(cols: set[int]) -> int:
            return sum(bounds[i][0] for i in cols) + table_overhead(len(cols))

        empty = [u for u in self._units if all(_plain(r[i]).strip() in ("", "-") for r in self.rows for i in u)]
        order = empty + [u for u in self._units if u not in empty]
        gone: list[tuple[int, ...]] = []
        for unit in order:
            if need(kept) <= width:
                break
            kept -= set(unit)
            gone.append(unit)
        for unit in reversed(gone[:-1]):  # the most important first: back in if it fits after all
            if need(kept | set(unit)) <= width:
                kept |= set(unit)
                gone.remove(unit)
        cols = sorted(kept)
        dropped = sorted(i for u in gone for i in u)
        if need(kept) > width:
            return cols, dropped, None
        widths = spread_widths([bounds[i][0] for i in cols], [bounds[i][1] for i in cols],
                               width - table_overhead(len(cols)))
        return cols, dropped, widths

    def render(self, width: int) -> Table:
        """The Rich table for a terminal ``width`` columns wide."""
        cols, dropped, widths = self.choose(width)
        caption = self.caption
        if dropped:
            note = (f"not shown at {width} columns: {', '.join(self.columns[i].called for i in dropped)}"
                    + (f" ({self.left_out})" if self.left_out else ""))
            caption = f"{caption}\n{note}" if caption else note
        t = _frame(self.title, caption)
        for k, i in enumerate(cols):
            col = self.columns[i]
            t.add_column(col.header, justify="left" if i == 0 or col.left or col.wrap else "right",
                         no_wrap=widths is not None and not col.wrap, overflow="fold",
                         width=None if widths is None else widths[k])
        for r in self.rows:
            t.add_row(*(r[i] for i in cols))
        return t

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> "RenderResult":
        yield self.render(options.max_width)

    def __rich_measure__(self, console: "Console", options: "ConsoleOptions") -> Measurement:
        return Measurement.get(console, options, self.render(options.max_width))


class SideBySideTable:
    """Runs side by side: a first column naming each figure (never cut), then one column per run, headed by
    the run's label (which wraps at its words). No run is ever dropped: where the runs do not fit side by
    side, they are shown in groups, each a table with the first column again. A figure's cell stays whole on
    one line; a prose row (``add_row(..., wrap=True)``) may wrap at its words."""

    def __init__(self, title: str, first: str, labels: Sequence[str], caption: str | None = None) -> None:
        self.title, self.first, self.labels, self.caption = title, first, list(labels), caption
        self.rows: list[tuple[str, list[str], bool]] = []

    def add_row(self, what: str, cells: Sequence[str], wrap: bool = False) -> None:
        if len(cells) != len(self.labels):
            raise ValueError(f"{len(cells)} cells for {len(self.labels)} runs")
        self.rows.append((what, list(cells), wrap))

    def _bounds(self, j: int) -> tuple[int, int]:
        label = text_widths(self.labels[j])
        cells = [(text_widths(cells[j]), wrap) for _, cells, wrap in self.rows]
        lo = max([label[0], *(m if wrap else w for (m, w), wrap in cells)])
        return lo, max([label[1], *(w for (_, w), _ in cells)])

    def groups(self, width: int) -> list[tuple[list[int], list[int] | None]]:
        """The runs in groups that fit ``width``: (run indices, column widths with the first column's first,
        or None where one run alone does not fit beside the first column)."""
        first = max(text_widths(x)[1] for x in [self.first, *(what for what, _, _ in self.rows)])
        bounds = [self._bounds(j) for j in range(len(self.labels))]
        groups: list[list[int]] = []
        for j in range(len(self.labels)):
            if groups and (first + sum(bounds[i][0] for i in [*groups[-1], j]) + table_overhead(len(groups[-1]) + 2)
                           <= width):
                groups[-1].append(j)
            else:
                groups.append([j])
        out: list[tuple[list[int], list[int] | None]] = []
        for g in groups:
            room = width - table_overhead(len(g) + 1) - first
            fits = sum(bounds[j][0] for j in g) <= room
            out.append((g, [first, *spread_widths([bounds[j][0] for j in g], [bounds[j][1] for j in g], room)]
                        if fits else None))
        return out

    def render(self, width: int) -> list[Table]:
        """The tables for a terminal ``width`` columns wide: one, or one per group of runs."""
        groups = self.groups(width)
        tables: list[Table] = []
        for n, (g, widths) in enumerate(groups):
            which = f"run {g[0] + 1}" if len(g) == 1 else f"runs {g[0] + 1}–{g[-1] + 1}"
            title = self.title if len(groups) == 1 else f"{self.title} ({which} of {len(self.labels)})"
            t = _frame(title, self.caption if n == len(groups) - 1 else None)
            t.add_column(self.first, justify="left", no_wrap=widths is not None, overflow="fold",
                         width=None if widths is None else widths[0])
            for k, j in enumerate(g):
                t.add_column(self.labels[j], justify="right", overflow="fold",
                             width=None if widths is None else widths[k + 1])
            for what, cells, _ in self.rows:
                t.add_row(what, *(cells[j] for j in g))
            tables.append(t)
        return tables

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> "RenderResult":
        yield from self.render(options.max_width)

    def __rich_measure__(self, console: "Console", options: "ConsoleOptions") -> Measurement:
        ms = [Measurement.get(console, options, t) for t in self.render(options.max_width)]
        return Measurement(max(m.minimum for m in ms), max(m.maximum for m in ms))


def fmt_frac(f: float, bound: bool) -> str:
    text = f"{100 * f:.0f} %"
    return f"[bold red]{text} ▲[/]" if bound else text


#: Where a column `fedbw estimate`'s tables leave out at a narrow width can be read.
ESTIMATE_LEFT_OUT = "fedbw estimate --json has every figure; a wider terminal shows them"


def profile_table(rows: Sequence, title: str) -> FitTable:
    """`fedbw estimate`'s round per uplink profile. Key columns, never cut: profile, up/client (the bytes the
    uplink carries), round (the headline time) and comm (its communication share, ▲ when bandwidth-bound).
    Where the terminal is too narrow the others leave in this order: framework, t_compute, down/client,
    t_down, Mbps up/down, t_up."""
    t = FitTable(title, [Col("profile", key=True), Col("Mbps up/down"), Col("up/client", key=True), Col("down/client"),
                         Col("t_down"), Col("t_compute"), Col("t_up"), Col("framework"), Col("round", key=True),
                         Col("comm", key=True)],
                 drop=("framework", "t_compute", "down/client", "t_down", "Mbps up/down", "t_up"),
                 caption=("framework = Flower's own time in the round (polls, a ClientApp process per message, the "
                          "server's work); comm = communication share of the round; ▲ above 30 % = bandwidth-bound; "
                          "round \\[low–high] = its central 80 % interval"),
                 left_out=ESTIMATE_LEFT_OUT)
    for r in rows:
        t.add_row(r.profile, f"{r.up_mbps:g}/{r.down_mbps:g}", fmt_bytes(r.bytes_up_per_client),
                  fmt_bytes(r.bytes_down_per_client), fmt_s(r.t_down_s), fmt_s(r.t_compute_s), fmt_s(r.t_up_s),
                  fmt_s(r.t_framework_s), escape(fmt_s_interval(r.round_time_s, r.round_interval_s)),
                  fmt_frac(r.comm_fraction, r.bandwidth_bound))
    return t


def fabric_table(rows: Sequence, fl_round_s: float | None, title: str) -> FitTable:
    """One AllReduce of the model's gradient per data-center fabric. Key columns, never cut: fabric, time,
    busbw GB/s (nccl-tests' headline figure) and FL round/this (the slowest FL round over this AllReduce, the
    comparison the command is for). Where the terminal is too narrow the others leave in this order: ranks
    (the title names them), size (the gradient the title names), algbw GB/s, algorithm."""
    t = FitTable(title, [Col("fabric", key=True), Col("ranks"), Col("size"), Col("algorithm", left=True),
                         Col("time", key=True), Col("algbw GB/s"), Col("busbw GB/s", key=True),
                         Col("FL round/this", key=True)],
                 drop=("ranks", "size", "algbw GB/s", "algorithm"), left_out=ESTIMATE_LEFT_OUT)
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
    own = sum(r.host.device_bound_s or 0.0 for r in hosted if r.host is not None)
    server = sum(r.host.server_bound_s or 0.0 for r in hosted if r.host is not None)
    whose = ([f"the devices' own CPU {fmt_s(own / len(hosted))}"] if own > 0 else []) + (
        [f"the server's {fmt_s(server / len(hosted))}"] if server > 0 else [])
    devices = (f"; links idle a round on {' and '.join(whose)} (a deployment of those speeds waits too: not the "
               "host's)") if whose else ""
    if not bound:
        return f"host: no round host-bound ({how}){devices}"
    return (f"[yellow]host-bound[/]: {len(bound)} of {len(hosted)} rounds ({', '.join(map(str, bound))}) — the host "
            f"held ≥ 5 % of the round ({how}); rerun with --dilation auto (docs/emulate.md){devices}")


def privacy_caption(rounds: Sequence[RoundRecord]) -> str | None:
    """What the ε column means: its sampling, adjacency and δ (an ε without them promises nothing)."""
    p = next((r.privacy for r in rounds if r.privacy is not None and r.epsilon is not None), None)
    if p is None:
        return None
    parts = [f"sampling {p.sampling}" if p.sampling else None, f"{p.adjacency} adjacency" if p.adjacency else None,
             f"δ = {p.delta:g}" if p.delta is not None else None]
    return "ε: " + ", ".join(x for x in parts if x) + " (docs/privacy.md)"


#: Where a column the run's tables leave out at a narrow width can be read.
RUN_LEFT_OUT = "records.jsonl has every figure; a wider terminal shows them"


def rounds_table(rounds: Sequence[RoundRecord], title: str) -> FitTable:
    """One row per round. Key columns, never cut: round, round time (with its interval), comm (the
    communication share, ▲ when bandwidth-bound) and up total (bytes up). Where the terminal is too narrow
    for every column (80 columns usually is), the others leave in this order: loss, down total, framework,
    compute, clients, comm time, ε, accuracy, host — a column that is all "-" (no accuracy in an estimate,
    no ε without DP) first; the caption names them."""
    host = any(r.host is not None for r in rounds)
    interval = any(r.round_interval_s for r in rounds)
    late = shows_used(rounds)
    cols = [Col("round", key=True), Col("used/sampled" if late else "clients"),
            Col("round time [80 %]" if interval else "round time", key=True),
            Col("comm", key=True), Col("comm time"), Col("compute"), Col("framework"), Col("up total", key=True),
            Col("down total"), Col("loss"), Col("accuracy"), Col("ε")] + ([Col("host")] if host else [])
    captions = [c for c in (privacy_caption(rounds), HOST_CAPTION if host else None,
                            INTERVAL_CAPTION if interval else None, late_caption(rounds) if late else None,
                            availability_caption(rounds)) if c]
    t = FitTable(title, cols, drop=("loss", "down total", "framework", "compute", "used/sampled" if late else "clients",
                                    "comm time", "ε",
                                    "accuracy", *(["host"] if host else [])),
                 caption="\n".join(captions) or None, left_out=RUN_LEFT_OUT)
    for r in rounds:
        t.add_row(str(r.round), used_cell(r, late), fmt_s_interval(r.round_time_s, r.round_interval_s),
                  fmt_frac(r.comm_fraction, r.bandwidth_bound),
                  fmt_s(r.comm_time_s), fmt_s(r.compute_time_s), fmt_s(r.framework_time_s),
                  fmt_bytes(r.bytes_up_total), fmt_bytes(r.bytes_down_total),
                  "-" if r.loss is None else f"{r.loss:.4f}", "-" if r.accuracy is None else f"{100 * r.accuracy:.1f} %",
                  "-" if r.epsilon is None else f"{r.epsilon:.3f}", *([fmt_host(r)] if host else []))
    return t


def by_profile_table(clients: Sequence[ClientRoundRecord], title: str) -> FitTable:
    """Mean per client and round, grouped by link profile: where each profile's time goes. Key columns,
    never cut: profile, up/client, t_up and client time; where the terminal is too narrow the others leave in
    this order: n, t_framework, t_compute, down/client, t_down. With a round policy (``[round]``), ``late``:
    the share of the profile's client-rounds whose reply missed the close."""
    groups: dict[str, list[ClientRoundRecord]] = defaultdict(list)
    for c in clients:
        if not c.dropped:
            groups[c.profile].append(c)
    late = any(c.late for c in clients)
    t = FitTable(title, [Col("profile", key=True), Col("n"), Col("up/client", key=True), Col("down/client"),
                         Col("t_down"), Col("t_compute"), Col("t_up", key=True), Col("t_framework"),
                         Col("client time", key=True)] + ([Col("late", key=True)] if late else []),
                 drop=("n", "t_framework", "t_compute", "down/client", "t_down"), left_out=RUN_LEFT_OUT)
    for name in sorted(groups):
        everyone = groups[name]
        late_cell = [f"{100 * sum(c.late for c in everyone) / len(everyone):.0f} %"] if late else []
        g = [c for c in everyone if c.stages]  # a late client under emulate has no measured stage
        if not g:
            t.add_row(name, str(len(everyone)), *["-"] * 7, *late_cell)
            continue
        t.add_row(name, str(len(everyone)), fmt_bytes(mean(c.bytes_up for c in g)),
                  fmt_bytes(mean(c.bytes_down for c in g)),
                  fmt_s(mean(c.t_down_s for c in g)), fmt_s(mean(c.t_compute_s for c in g)),
                  fmt_s(mean(c.t_up_s for c in g)), fmt_s(mean(c.t_framework_s for c in g)),
                  fmt_s(mean(c.t_total_s for c in g)), *late_cell)
    return t


def catalog_table(title: str, columns: Sequence[Col], rows: Sequence[Sequence[str]],
                  drop: Sequence[str | tuple[str, ...]] = (), left_out: str = "") -> FitTable:
    """A listing (`fedbw profiles`, `fedbw models`, the analytic sweep): a :class:`FitTable` of ``rows``."""
    t = FitTable(title, columns, drop=drop, left_out=left_out)
    for row in rows:
        t.add_row(*row)
    return t
