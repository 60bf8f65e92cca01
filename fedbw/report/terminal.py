"""Terminal rendering of results: what a person reads after each command."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from rich.console import Console
from rich.markup import escape

from fedbw.report import tables
from fedbw.report.format import fmt_bytes, fmt_s
from fedbw.results.records import read_records

if TYPE_CHECKING:
    from fedbw.compare import EstimateReport, SweepPoint
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
    t = tables.catalog_table(f"Sweep of {param} (analytic, steady-state round)",
                             [param, "round", "comm time", "comm", "up/client", "down/client"], [])
    for r in rows:
        value = f"{r.value:.4g}" if isinstance(r.value, float) else str(r.value)
        t.add_row(value, fmt_s(r.round_time_s), fmt_s(r.comm_time_s),
                  tables.fmt_frac(r.comm_fraction, r.bandwidth_bound), fmt_bytes(r.bytes_up_per_client),
                  fmt_bytes(r.bytes_down_per_client))
    console.print(t)


def render_run(console: Console, cfg: "ExperimentConfig", result: "RunResult") -> None:
    console.print(f"[bold]{cfg.name}[/] · engine {cfg.engine} · model {cfg.model.name} · "
                  f"{cfg.clients.per_round}/{cfg.clients.total} clients per round")
    _render(console, result.clients, result.rounds, cfg.engine)
    if result.stopped_early:
        console.print(f"[yellow]stopped early:[/] {result.stopped_early}")
    console.print(f"records: {result.run_dir}/records.jsonl")


def render_records(console: Console, run_dir: Path) -> None:
    f = read_records(run_dir)
    clients, rounds = f.clients, f.rounds
    engine = rounds[0].engine if rounds else str(f.header.get("engine") or "?")
    _render(console, clients, rounds, engine)
    for note in f.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    if Path(run_dir).is_dir():
        from fedbw.report.plots import plot_run

        for p in plot_run(Path(run_dir), clients, rounds, Path(run_dir).name):
            console.print(f"plot: {p}")


def render_comparison(console: Console, summaries: Sequence) -> None:
    """Runs side by side: one row per run, then per-profile client time across runs."""
    t = tables.new_table("Runs side by side", ["run", "engine", "rounds", "mean round", "comm", "up/client",
                                               "down/client", "final acc.", "ε"], left=("engine",))
    for s in summaries:
        t.add_row(s.run, s.engine, str(s.rounds), fmt_s(s.mean_round_time_s),
                  f"{100 * s.mean_comm_fraction:.0f} %", fmt_bytes(s.mean_bytes_up_per_client),
                  fmt_bytes(s.mean_bytes_down_per_client),
                  "-" if s.final_accuracy is None else f"{100 * s.final_accuracy:.1f} %",
                  "-" if s.final_epsilon is None else f"{s.final_epsilon:.3f}")
    console.print(t)
    profiles = sorted({p for s in summaries for p in s.per_profile_client_time_s})
    if profiles:
        p = tables.new_table("Mean client time per round by profile (upload in brackets)",
                             ["profile", *[s.run for s in summaries]])
        for name in profiles:
            p.add_row(name, *[(f"{fmt_s(s.per_profile_client_time_s[name])} "
                               f"({fmt_s(s.per_profile_up_s[name])})")
                              if name in s.per_profile_client_time_s else "-" for s in summaries])
        console.print(p)


def _render(console: Console, clients, rounds, engine: str) -> None:
    clock = "network clock"
    if engine == "emulate":
        k = next((r.host.dilation for r in rounds if r.host is not None), 1.0)
        clock = f"emulated clock, dilation {k:g}×" if k > 1 else "wall clock"
    console.print(tables.rounds_table(rounds, f"Rounds ({clock})"))
    if (line := tables.host_summary(rounds)) is not None:
        console.print(line)
    console.print(tables.by_profile_table(clients, "Per client and round, by link profile (means)"))


def render_catalogs(console: Console) -> None:
    from fedbw.catalog import DEVICE_PROFILES, FABRICS, LINK_PROFILES, NO_SERVER_LINK, SERVER_LINKS

    console.print(tables.catalog_table(
        "Link profiles (line rates; TCP payload ≈ 95.6 % of them)",
        ["name", "up Mbps", "down Mbps", "RTT ms", "jitter ms", "description"],
        [[p.name, f"{p.up_mbps:g}", f"{p.down_mbps:g}", f"{p.rtt_ms:g}", f"{p.jitter_ms:g}", p.description]
         for p in LINK_PROFILES.values()]))
    console.print(tables.catalog_table(
        f"Server links (`server.link`; \"{NO_SERVER_LINK}\" = the server's link never limits)",
        ["name", "up Mbps", "down Mbps", "description"],
        [[s.name, f"{s.up_mbps:g}", f"{s.down_mbps:g}", s.description] for s in SERVER_LINKS.values()]))
    console.print(tables.catalog_table(
        "Data-center fabrics (AllReduce bus bandwidth as nccl-tests reports it)",
        ["name", "line GB/s", "busbw GB/s", "α µs", "scope", "description"],
        [[f.name, f"{f.line_rate_gbps:g}", f"{f.busbw_gbps:g}", f"{f.alpha_us:g}", f.scope, f.description]
         for f in FABRICS.values()]))
    console.print(tables.catalog_table(
        "Client device profiles (sustained training throughput; CPU speed for Flower's own work)",
        ["name", "TFLOP/s", "cpu_speed", "description"],
        [[d.name, f"{d.effective_tflops:g}", f"{d.cpu_speed:g}", d.description] for d in DEVICE_PROFILES.values()]))
    console.print("Sources for every figure: docs/catalog.md")


def render_models(console: Console) -> None:
    from fedbw.catalog import MODELS

    console.print(tables.catalog_table(
        "Models", ["name", "params", "float32", "fwd GFLOP/sample", "input", "trainable here", "description"],
        [[m.name, f"{m.params:,}", fmt_bytes(m.float32_bytes), f"{m.forward_flops / 1e9:.4g}",
          "×".join(map(str, m.input_shape)), "yes" if m.trainable_here else "estimate/synthetic", m.description]
         for m in MODELS.values()]))
    console.print("Any size: --model params=N (e.g. params=7B); FLOPs then ≈ 2 per parameter per sample.")


def _dtype(nbytes: int) -> str:
    return {1: "int8", 2: "fp16", 4: "float32", 8: "float64"}[nbytes]
