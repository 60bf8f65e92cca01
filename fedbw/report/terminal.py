"""Terminal rendering of results: what a person reads after each command."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from rich.console import Console
from rich.markup import escape

from fedbw.report import tables
from fedbw.report.format import fmt_bytes, fmt_s, fmt_s_interval

if TYPE_CHECKING:
    from fedbw.results.compared import ComparedRun
    from fedbw.results.estimates import EstimateReport, SweepPoint
    from fedbw.results.summary import RunSummary
    from fedbw.results.sweep_index import SweepIndex
    from fedbw.config import ExperimentConfig
    from fedbw.engines.base import RunResult


def render_estimate(console: Console, rep: "EstimateReport") -> None:
    cfg = rep.config
    head = (f"[bold]{rep.model}[/] · {rep.params:,} params ({fmt_bytes(4 * rep.params)} float32) · "
            f"{rep.clients_per_round} clients/round · SecAgg+ {rep.secagg_label} · codec {cfg.compression.codec} · "
            f"device {cfg.clients.device_profile}")
    console.print(head)
    console.print(tables.profile_table(rep.profiles, f"Federated round (round {rep.round_index}) per uplink profile"))
    slowest = max((p.round_time_s for p in rep.profiles), default=None)
    console.print(tables.fabric_table(rep.fabrics, slowest,
                                      f"Data center: one AllReduce of the {_dtype(cfg.datacenter.grad_bytes_per_value)} gradient "
                                      f"at {cfg.datacenter.ranks} ranks"))
    if rep.profiles and rep.fabrics:
        p = max(rep.profiles, key=lambda x: x.round_time_s)
        f = min(rep.fabrics, key=lambda x: x.time_s)
        console.print(f"Slowest home round ({p.profile}: {fmt_s(p.round_time_s)}, "
                      f"{100 * p.comm_fraction:.0f} % communication) vs AllReduce on {f.fabric} "
                      f"({fmt_s(f.time_s)}): [bold]{p.round_time_s / f.time_s:,.0f}×[/]")


def render_sweep(console: Console, param: str, rows: Sequence["SweepPoint"]) -> None:
    """The analytic sweep, one row per value. Key columns, never cut: the value, round (the steady-state
    round time), comm (its communication share) and up/client; where the terminal is too narrow the others
    leave in this order: down/client, comm time."""
    t = tables.catalog_table(f"Sweep of {param} (analytic, steady-state round)",
                             [tables.Col(param, key=True), tables.Col("round", key=True), tables.Col("comm time"),
                              tables.Col("comm", key=True), tables.Col("up/client", key=True),
                              tables.Col("down/client")],
                             [[f"{r.value:.4g}" if isinstance(r.value, float) else str(r.value), fmt_s(r.round_time_s),
                               fmt_s(r.comm_time_s), tables.fmt_frac(r.comm_fraction, r.bandwidth_bound),
                               fmt_bytes(r.bytes_up_per_client), fmt_bytes(r.bytes_down_per_client)] for r in rows],
                             drop=("down/client", "comm time"), left_out="--json has every figure; a wider terminal shows them")
    console.print(t)


def render_run(console: Console, cfg: "ExperimentConfig", result: "RunResult") -> None:
    console.print(f"[bold]{cfg.name}[/] · engine {cfg.engine} · model {cfg.model.name} · "
                  f"{cfg.clients.per_round}/{cfg.clients.total} clients per round")
    _render(console, result.clients, result.rounds, cfg.engine)
    if result.stopped_early:
        console.print(f"[yellow]stopped early:[/] {result.stopped_early}")
    console.print(f"records: {result.run_dir}/records.jsonl")


def render_records(console: Console, run: "ComparedRun") -> None:
    """A run's tables, as `fedbw run` printed them (the reader's warnings are the caller's to print)."""
    _render(console, run.clients, run.rounds, run.summary.engine)


COMPARISON_CAPTION = ("round parts are those of the critical path: each stage's slowest client (download + "
                      "upload = communication); comm = communication share of the round, ▲ above 30 % = "
                      "bandwidth-bound; bytes are means per client and round; time to target: network-clock "
                      "seconds until a round first reached it; host (emulate): share of the round the emulating "
                      "host held, ◆ at 5 % or more; ÷ AllReduce F ×N: the mean FL round over one AllReduce of "
                      "the model's gradient on fabric F at N ranks")


def _eps_cell(s) -> str:
    if s.final_epsilon is None:
        return "-"
    ctx = s.epsilon_context or {}
    terms = [str(ctx.get("sampling") or ""), str(ctx.get("adjacency") or ""),
             f"δ={ctx['delta']:g}" if ctx.get("delta") is not None else ""]
    terms = [t for t in terms if t]
    return f"{s.final_epsilon:.3g}" + (f" ({', '.join(terms)})" if terms else "")


def _host_cell(s) -> str:
    if s.mean_host_share is None:
        return "-"
    bound = len(s.host_bound_rounds or [])
    return f"{100 * s.mean_host_share:.0f} %" + (f" ◆ {bound}/{s.rounds} rounds host-bound" if bound else "")


def comparison_rows(runs: Sequence["ComparedRun"], target: float | None) -> list[tuple[str, list[str]]]:
    """The side-by-side table as plain text: (what, one cell per run); shared by the terminal and the page."""
    from fedbw.results.summary import time_to_accuracy

    S = [r.summary for r in runs]
    rows: list[tuple[str, list[str]]] = [
        ("engine", [s.engine for s in S]),
        ("rounds", [str(s.rounds) for s in S]),
        ("privacy", [r.privacy for r in runs]),
        ("round time (mean) [80 %]" if any(s.mean_round_interval_s for s in S) else "round time (mean)",
         [fmt_s_interval(s.mean_round_time_s, s.mean_round_interval_s) for s in S]),
        ("  download", [fmt_s(s.mean_download_s) for s in S]),
        ("  compute", [fmt_s(s.mean_compute_s) for s in S]),
        ("  upload", [fmt_s(s.mean_upload_s) for s in S]),
        ("  framework (Flower, server)", [fmt_s(s.mean_framework_s) for s in S]),
    ]
    stages = list(dict.fromkeys(k for s in S for k in s.mean_stage_times_s))
    if stages != ["fit"]:
        rows += [(f"  stage {k}", [fmt_s(s.mean_stage_times_s[k]) if k in s.mean_stage_times_s else "-" for s in S])
                 for k in stages]
    if any((s.mean_server_link_s or 0) > 1e-6 for s in S):
        rows.append(("  of comm: server link wait", [fmt_s(s.mean_server_link_s) for s in S]))
    rows += [
        ("comm share (▲ > 30 %)", [f"{100 * s.mean_comm_fraction:.0f} %" + (" ▲" if s.bandwidth_bound else "")
                                   for s in S]),
        ("bytes up / client", [fmt_bytes(s.mean_bytes_up_per_client) for s in S]),
        ("bytes down / client", [fmt_bytes(s.mean_bytes_down_per_client) for s in S]),
        ("ε (sampling, adjacency, δ)", [_eps_cell(s) for s in S]),
        ("final accuracy", ["-" if s.final_accuracy is None else f"{100 * s.final_accuracy:.1f} %" for s in S]),
    ]
    if target is not None:
        times = [time_to_accuracy(s, target) for s in S]
        rows.append((f"time to {100 * target:g} % accuracy",
                     [fmt_s(t) if t is not None else ("not reached" if s.accuracy_curve else "-")
                      for t, s in zip(times, S)]))
    if any(s.mean_host_share is not None for s in S):
        rows.append(("host share (emulate)", [_host_cell(s) for s in S]))
    fabrics = list(dict.fromkeys((f.fabric, f.ranks) for r in runs for f in r.fabrics))
    for name, ranks in fabrics:
        cells = []
        for r in runs:
            f = next((f for f in r.fabrics if (f.fabric, f.ranks) == (name, ranks)), None)
            ratio = None if f is None else f.fl_round_over_allreduce
            cells.append("-" if ratio is None else f"{ratio:,.0f}×")
        rows.append((f"÷ AllReduce {name} ×{ranks}", cells))
    return rows


#: Rows of the side-by-side table whose cells are words, not one figure: they may wrap at their words.
PROSE_ROWS = ("privacy", "ε (sampling, adjacency, δ)", "host share (emulate)")


def render_comparison(console: Console, runs: Sequence["ComparedRun"], target: float | None = None) -> None:
    """Runs side by side: one column per run, one row per figure; then client time per profile.

    Nothing is cut at any width the first column and one run fit in (about 60 columns): every column is key,
    the figures' names and each run's figures (round time with its interval, comm share, bytes, …) stay whole
    on one line; the runs' labels and the prose rows (privacy, ε with its terms, host share) wrap at their
    words; where the runs do not fit side by side (at 80 columns, usually two or three do), they come in
    groups, one table per group, each with the figures' names again."""
    labels = [escape(r.label) for r in runs]
    t = tables.SideBySideTable("Runs side by side", "", labels, caption=COMPARISON_CAPTION)
    for what, cells in comparison_rows(runs, target):
        t.add_row(escape(what), [f"[bold red]{escape(c)}[/]" if "▲" in c else
                                 f"[bold yellow]{escape(c)}[/]" if "◆" in c else escape(c) for c in cells],
                  wrap=what in PROSE_ROWS)
    console.print(t)
    summaries = [r.summary for r in runs]
    profiles = sorted({p for s in summaries for p in s.per_profile_client_time_s})
    if profiles:
        p = tables.SideBySideTable("Mean client time per round by profile (upload in brackets)", "profile", labels)
        for name in profiles:
            p.add_row(escape(name), [(f"{fmt_s(s.per_profile_client_time_s[name])} "
                                      f"({fmt_s(s.per_profile_up_s[name])})")
                                     if name in s.per_profile_client_time_s else "-" for s in summaries])
        console.print(p)


def render_grid_sweep(console: Console, sweep_dir: Path, index: "SweepIndex",
                      summaries: dict[int, "RunSummary | None"]) -> None:
    """A grid sweep's points: their values, status and headline figures; then where to look next. Key
    columns, never cut: # (the point), each swept key's value, status, mean round and comm (its
    communication share); where the terminal is too narrow the others leave in this order: run directory,
    rounds, final acc. (the caption says so and where to read them)."""
    from fedbw.results.sweep_index import describe_value

    keys = [a.key for a in index.grid]
    t = tables.FitTable(f"Sweep {index.name} ({index.engine}): {len(index.points)} points",
                        [tables.Col("#", key=True), *[tables.Col(k, key=True, left=True) for k in keys],
                         tables.Col("status", key=True, left=True), tables.Col("rounds"),
                         tables.Col("mean round", key=True), tables.Col("comm", key=True), tables.Col("final acc."),
                         tables.Col("run directory", left=True)],
                        drop=("run directory", "rounds", "final acc."),
                        left_out="sweep.json names each point's run directory; fedbw compare shows every figure")
    for p in index.points:
        s = summaries.get(p.index)
        status = {"done": "[green]done[/]", "failed": "[red]failed[/]"}.get(p.status, f"[yellow]{p.status}[/]")
        t.add_row(str(p.index), *[escape(describe_value(p.overrides.get(k))) for k in keys], status,
                  "-" if s is None else str(s.rounds), "-" if s is None else fmt_s(s.mean_round_time_s),
                  "-" if s is None else tables.fmt_frac(s.mean_comm_fraction, s.bandwidth_bound),
                  "-" if s is None or s.final_accuracy is None else f"{100 * s.final_accuracy:.1f} %",
                  escape(p.run_dir or "-"))
    console.print(t)
    for p in index.points:
        if p.stopped_early:
            console.print(f"[yellow]point {p.index} stopped early:[/] {escape(p.stopped_early)}")
    console.print(f"sweep index: {sweep_dir}/sweep.json\nside by side: fedbw compare {sweep_dir}\n"
                  f"page with every figure: fedbw report {sweep_dir}", highlight=False, soft_wrap=True)


def _render(console: Console, clients, rounds, engine: str) -> None:
    clock = "network clock"
    if engine == "emulate":
        k = next((r.host.dilation for r in rounds if r.host is not None), 1.0)
        clock = f"emulated clock, dilation {k:g}×" if k > 1 else "wall clock"
    console.print(tables.rounds_table(rounds, f"Rounds ({clock})"))
    if (line := tables.host_summary(rounds)) is not None:
        console.print(line)
    console.print(tables.by_profile_table(clients, "Per client and round, by link profile (means)"))


#: Where a column the catalog listings leave out at a narrow width can be read.
CATALOG_LEFT_OUT = "a wider terminal shows them"


def render_catalogs(console: Console) -> None:
    """`fedbw profiles`: link profiles, server links, fabrics, device profiles. Key columns, never cut: each
    name and its headline figures (a link's up and down Mbps; a fabric's busbw and α; a device's TFLOP/s).
    Descriptions wrap at their words; where even so the terminal is too narrow the others leave first
    (jitter, then RTT; scope, then line rate; cpu_speed), the description last."""
    from fedbw.catalog import DEVICE_PROFILES, FABRICS, LINK_PROFILES, NO_SERVER_LINK, SERVER_LINKS

    Col = tables.Col
    describe = Col("description", wrap=True)
    console.print(tables.catalog_table(
        "Link profiles (line rates; TCP payload ≈ 95.6 % of them)",
        [Col("name", key=True), Col("up Mbps", key=True), Col("down Mbps", key=True), Col("RTT ms"),
         Col("jitter ms"), describe],
        [[p.name, f"{p.up_mbps:g}", f"{p.down_mbps:g}", f"{p.rtt_ms:g}", f"{p.jitter_ms:g}", p.description]
         for p in LINK_PROFILES.values()], drop=("jitter ms", "RTT ms", "description"), left_out=CATALOG_LEFT_OUT))
    console.print(tables.catalog_table(
        f"Server links (`server.link`; \"{NO_SERVER_LINK}\" = the server's link never limits)",
        [Col("name", key=True), Col("up Mbps", key=True), Col("down Mbps", key=True), describe],
        [[s.name, f"{s.up_mbps:g}", f"{s.down_mbps:g}", s.description] for s in SERVER_LINKS.values()],
        left_out=CATALOG_LEFT_OUT))
    console.print(tables.catalog_table(
        "Data-center fabrics (AllReduce bus bandwidth as nccl-tests reports it)",
        [Col("name", key=True), Col("line GB/s"), Col("busbw GB/s", key=True), Col("α µs", key=True),
         Col("scope", left=True), describe],
        [[f.name, f"{f.line_rate_gbps:g}", f"{f.busbw_gbps:g}", f"{f.alpha_us:g}", f.scope, f.description]
         for f in FABRICS.values()], drop=("scope", "line GB/s", "description"), left_out=CATALOG_LEFT_OUT))
    console.print(tables.catalog_table(
        "Client device profiles (sustained training throughput; CPU speed for Flower's own work)",
        [Col("name", key=True), Col("TFLOP/s", key=True), Col("cpu_speed"), describe],
        [[d.name, f"{d.effective_tflops:g}", f"{d.cpu_speed:g}", d.description] for d in DEVICE_PROFILES.values()],
        drop=("cpu_speed", "description"), left_out=CATALOG_LEFT_OUT))
    render_shipped_traces(console)
    console.print("Sources for every figure: docs/catalog.md")


def render_shipped_traces(console: Console) -> None:
    """The shipped link-rate traces (synthetic stand-ins for measured ones: fedbw/catalog/traces.py) with
    each direction's time-weighted mean, 10th and 90th percentile, read from the CSVs that ship."""
    from fedbw.catalog.traces import shipped_traces
    from fedbw.traces import load_trace

    Col = tables.Col
    rows = []
    for shipped in shipped_traces().values():
        trace = load_trace(shipped.path)
        rows.append([shipped.name] + [f"{trace.mean(d):.3g} [{trace.percentile(d, 10):.3g}–{trace.percentile(d, 90):.3g}]"
                                      for d in ("up", "down")] + [shipped.description])
    if rows:
        console.print(tables.catalog_table(
            "Link-rate traces (`fedbw trace show NAME`; synthetic, with a measured trace's statistics: docs/traces.md)",
            [Col("name", key=True), Col("up Mbps mean [p10–p90]", key=True),
             Col("down Mbps mean [p10–p90]", key=True), Col("description", wrap=True)],
            rows, drop=("description",), left_out=CATALOG_LEFT_OUT))


def render_models(console: Console) -> None:
    """`fedbw models`. Key columns, never cut: name, params and float32 (the model's size in bytes, what a
    round carries). The description wraps at its words; where the terminal is too narrow the others leave in
    this order: input, fwd GFLOP/sample, trainable here, description."""
    from fedbw.catalog import MODELS

    Col = tables.Col
    console.print(tables.catalog_table(
        "Models", [Col("name", key=True), Col("params", key=True), Col("float32", key=True), Col("fwd GFLOP/sample"),
                   Col("input", left=True), Col("trainable here"), Col("description", wrap=True)],
        [[m.name, f"{m.params:,}", fmt_bytes(m.float32_bytes), f"{m.forward_flops / 1e9:.4g}",
          "×".join(map(str, m.input_shape)), "yes" if m.trainable_here else "estimate/synthetic", m.description]
         for m in MODELS.values()], drop=("input", "fwd GFLOP/sample", "trainable here", "description"),
        left_out=CATALOG_LEFT_OUT))
    console.print("Any size: --model params=N (e.g. params=7B); FLOPs then ≈ 2 per parameter per sample.")


def _dtype(nbytes: int) -> str:
    return {1: "int8", 2: "fp16", 4: "float32", 8: "float64"}[nbytes]
