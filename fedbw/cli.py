"""The ``fedbw`` command line: parse, call one function, render with Rich. No logic lives here."""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.markup import escape

from fedbw.errors import FedbwError

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="rich",
                  help="fedbw — how long federated rounds take on home uplinks, and what privacy costs.")
# Piped output (files, CI logs) gets a wide console so tables are never cut; terminals keep their width.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn FedbwError into one red line and its exit code; Ctrl-C into exit 130. Never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except FedbwError as exc:
            err.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, highlight=False)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err.print("[yellow]interrupted[/]: finished rounds are kept in the run directory.")
            raise typer.Exit(130) from None

    return wrapper


def _load(config: Path, overrides: list[str], engine: str | None = None):
    from fedbw.config import load_config

    cfg = load_config(config, overrides)
    if engine is not None:
        from fedbw.config import config_from_dict, config_to_dict

        cfg = config_from_dict(config_to_dict(cfg), [f"engine={json.dumps(engine)}"], source=str(config))
    return cfg


SetOpt = typer.Option([], "--set", "-s", help="Override a config key: --set clients.total=20 (value in TOML syntax)")


@app.command()
@friendly
def validate(config: Path = typer.Argument(..., help="experiment TOML"), set_: list[str] = SetOpt) -> None:
    """Check a config without running it; prints the resolved plan in one line."""
    from fedbw.plan import build_plan

    cfg = _load(config, set_)
    plan = build_plan(cfg)
    mix = ", ".join(f"{p}×{sum(c.profile == p for c in plan.clients)}" for p in plan.profiles_used)
    out.print(f"[green]ok[/] {config}: {cfg.name}, engine {cfg.engine}, model {plan.model.name} "
              f"({plan.model.params:,} params), {cfg.clients.per_round}/{cfg.clients.total} clients per round "
              f"over {cfg.training.rounds} rounds, links {mix}")


@app.command()
@friendly
def run(config: Path = typer.Argument(..., help="experiment TOML (see experiments/)"),
        set_: list[str] = SetOpt,
        engine: Optional[str] = typer.Option(None, "--engine", "-e", help="estimate | simulate | emulate"),
        json_out: bool = typer.Option(False, "--json", help="print the round records as JSON")) -> None:
    """Run an experiment config; records, config and environment go to a new run directory."""
    from fedbw.report import render_run
    from fedbw.runner import run_experiment

    cfg = _load(config, set_, engine)
    with _progress(cfg.training.rounds, cfg.clients.per_round, quiet=json_out) as progress:
        result = run_experiment(cfg, progress)
    if json_out:
        out.print_json(json.dumps([r.to_json() for r in result.rounds]))
        return
    render_run(out, cfg, result)


class _progress:
    """A Rich progress bar over rounds and clients, or nothing when output is machine-read."""

    def __init__(self, rounds: int, per_round: int, quiet: bool) -> None:
        self.rounds, self.per_round, self.quiet = rounds, per_round, quiet

    def __enter__(self) -> Callable[[int, int, int], None]:
        if self.quiet:
            return lambda r, d, t: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=err, transient=True)
        self.bar.start()
        self.task = self.bar.add_task("rounds", total=self.rounds)

        def update(round_index: int, done: int, total: int) -> None:
            finished = round_index if done >= total else round_index - 1
            self.bar.update(self.task, completed=finished,
                            description=f"round {round_index}/{self.rounds} · clients {done}/{total}")

        return update

    def __exit__(self, *exc: object) -> None:
        if not self.quiet:
            self.bar.stop()


@app.command()
@friendly
def estimate(config: Optional[Path] = typer.Argument(None, help="optional experiment TOML to start from"),
             model: Optional[str] = typer.Option(None, "--model", "-m", help="catalog model or params=N"),
             profile: list[str] = typer.Option([], "--profile", "-p", help="link profile(s) to compare"),
             fabric: list[str] = typer.Option([], "--fabric", "-f", help="data-center fabric(s)"),
             ranks: Optional[int] = typer.Option(None, "--ranks", "-r", help="AllReduce ranks (GPUs)"),
             clients_per_round: Optional[int] = typer.Option(None, "--clients", help="clients per round"),
             secagg: Optional[str] = typer.Option(None, "--secagg", help="off | stock | packed"),
             codec: Optional[str] = typer.Option(None, "--codec", help="none | fp16 | int8 | topk"),
             set_: list[str] = SetOpt,
             json_out: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """Analytic answer, instantly: round time per uplink profile beside AllReduce on data-center fabrics."""
    from fedbw.compare import estimate_report

    report = estimate_report(config, model=model, profiles=profile, fabrics=fabric, ranks=ranks,
                             clients_per_round=clients_per_round, secagg=secagg, codec=codec, overrides=set_)
    if json_out:
        out.print_json(json.dumps(report.to_json()))
        return
    from fedbw.report import render_estimate

    render_estimate(out, report)


@app.command()
@friendly
def sweep(config: Path = typer.Argument(..., help="experiment TOML"),
          param: str = typer.Option(..., "--param", help="config key to vary, e.g. network.overrides... or "
                                    "clients.per_round, compression.codec, up_mbps"),
          values: Optional[str] = typer.Option(None, "--values", help="comma-separated values"),
          range_: Optional[str] = typer.Option(None, "--range", help="start:stop:count (inclusive, evenly spaced)"),
          set_: list[str] = SetOpt,
          json_out: bool = typer.Option(False, "--json")) -> None:
    """Vary one parameter with the analytic engine and tabulate round time and comm share."""
    from fedbw.compare import run_sweep, sweep_values
    from fedbw.report import render_sweep

    points = sweep_values(values, range_)
    rows = run_sweep(config, param, points, set_)
    if json_out:
        out.print_json(json.dumps([asdict(r) for r in rows]))
        return
    render_sweep(out, param, rows)


@app.command()
@friendly
def allreduce(model: Optional[str] = typer.Option(None, "--model", "-m", help="size from a model's gradient"),
              dtype_bytes: int = typer.Option(4, "--dtype-bytes", help="bytes per value with --model (2 = fp16)"),
              sizes: str = typer.Option("8:128M:4", "--sizes", help="one size or begin:end:factor (K/M/G = 2^10..)"),
              fabric: str = typer.Option("ib-ndr400", "--fabric", "-f", help="fabric (between nodes with --node-fabric)"),
              ranks: str = typer.Option("8", "--ranks", "-r", help="8, 2,4,8 or 2:1024"),
              algorithm: str = typer.Option("best", "--algorithm", help="best | ring | recursive-doubling | rabenseifner"),
              node_fabric: Optional[str] = typer.Option(None, "--node-fabric", help="intra-node fabric, e.g. nvlink4"),
              gpus_per_node: int = typer.Option(8, "--gpus-per-node"),
              json_out: bool = typer.Option(False, "--json")) -> None:
    """AllReduce in the α-β model, printed like nccl-tests (size, time, algbw, busbw)."""
    from fedbw.compare import allreduce_rows, parse_ranks, parse_sizes
    from fedbw.report import render_allreduce

    if model:
        from fedbw.catalog import get_model

        size_list = [get_model(model).params * dtype_bytes]
    else:
        size_list = parse_sizes(sizes)
    rows = allreduce_rows(size_list, parse_ranks(ranks), fabric, algorithm, node_fabric, gpus_per_node)
    if json_out:
        out.print_json(json.dumps([asdict(r) for r in rows]))
        return
    render_allreduce(out, rows)


@app.command()
@friendly
def shape(listen: str = typer.Option("127.0.0.1:9100", "--listen",
                                     help="HOST:PORT of the (first) client port; loopback unless --allow-non-loopback"),
          upstream: Optional[str] = typer.Option(None, "--upstream", help="HOST:PORT of the server, e.g. the SuperLink"),
          profile: Optional[str] = typer.Option(None, "--profile", "-p", help="link profile (`fedbw profiles`)"),
          up_mbps: Optional[float] = typer.Option(None, "--up-mbps", help="uplink, TCP payload Mbps (overrides the profile)"),
          down_mbps: Optional[float] = typer.Option(None, "--down-mbps", help="downlink, TCP payload Mbps"),
          rtt_ms: Optional[float] = typer.Option(None, "--rtt-ms", help="added round trip, ms (half each way)"),
          jitter_ms: Optional[float] = typer.Option(None, "--jitter-ms", help="round-trip jitter, ms (± half each way)"),
          clients: int = typer.Option(1, "--clients", "-n", help="N clients on ports P..P+N-1, one link each"),
          map_file: Optional[Path] = typer.Option(None, "--map", help="TOML client map (docs/shaper.md)"),
          ledger: Optional[Path] = typer.Option(None, "--ledger", help="append JSONL ledger records here"),
          allow_non_loopback: bool = typer.Option(False, "--allow-non-loopback",
                                                  help="listen on a non-loopback address")) -> None:
    """Shape real TCP links in front of any service: one port per client, rate/latency/jitter each way."""
    from fedbw.shaper import run_shaper_blocking
    from fedbw.shaper.cli_support import describe_routes, describe_totals, routes_from_options

    routes = routes_from_options(listen=listen, upstream=upstream, profile=profile, profile_lookup=_profile_link,
                                 clients=clients, map_file=map_file, up_mbps=up_mbps, down_mbps=down_mbps,
                                 rtt_ms=rtt_ms, jitter_ms=jitter_ms)

    def ready(shaper: Any) -> None:
        for line in describe_routes(routes, shaper.ports):
            out.print(line, highlight=False)
        out.print("shaping — Ctrl-C to stop", style="dim")

    snap = run_shaper_blocking(routes, ledger_path=ledger, allow_non_loopback=allow_non_loopback, on_ready=ready)
    for line in describe_totals(snap):
        out.print(line, highlight=False)


def _profile_link(name: str) -> Any:
    """A catalog profile as the shaper's LinkSpec, at TCP payload rates (as the network model uses)."""
    from fedbw.catalog.links import get_link_profile
    from fedbw.shaper import LinkSpec

    p = get_link_profile(name)
    return LinkSpec.from_rtt(p.up_payload_mbps, p.down_payload_mbps, p.rtt_ms, p.jitter_ms)


@app.command()
@friendly
def profiles() -> None:
    """Link profiles, data-center fabrics and client device profiles."""
    from fedbw.report import render_catalogs

    render_catalogs(out)


@app.command()
@friendly
def models() -> None:
    """Models by name with their parameter counts and per-sample FLOPs."""
    from fedbw.report import render_models

    render_models(out)


@app.command()
@friendly
def report(run_dir: Path = typer.Argument(..., help="a run directory (or its records.jsonl)")) -> None:
    """Print the tables of a finished (or interrupted) run."""
    from fedbw.report import render_records

    render_records(out, run_dir)


@app.command()
@friendly
def compare(run_dirs: list[Path] = typer.Argument(..., help="two or more run directories"),
            json_out: bool = typer.Option(False, "--json")) -> None:
    """Put runs side by side (any engines): round time, comm share, bytes, accuracy, ε, per profile."""
    from fedbw.report import render_comparison
    from fedbw.results.summary import summarize_run_dir

    summaries = [summarize_run_dir(d) for d in run_dirs]
    if json_out:
        out.print_json(json.dumps([asdict(s) for s in summaries]))
        return
    render_comparison(out, summaries)


@app.command()
@friendly
def emulate(app_dir: Path = typer.Option(..., "--app", help="a Flower app directory (pyproject with [tool.flwr.app])"),
            clients: int = typer.Option(2, "--clients", "-n", help="SuperNodes, one shaped link each"),
            profile: str = typer.Option("home-30", "--profile", "-p", help="link profile (`fedbw profiles`)"),
            rounds: Optional[int] = typer.Option(None, "--rounds", help="sets the app's num-server-rounds"),
            run_config: list[str] = typer.Option([], "--run-config", "-c", help="key=value for flwr run"),
            timeout: float = typer.Option(1800.0, "--timeout", help="seconds before the run is stopped"),
            out_dir: Optional[Path] = typer.Option(None, "--out", help="write records.jsonl and logs here")) -> None:
    """Run any Flower app, unmodified, on Flower's Deployment Engine behind per-client shaped links."""
    from fedbw.engines.emulate import render_app_run, run_app

    result = run_app(app_dir, clients, profile, rounds=rounds, run_config=run_config, timeout_s=timeout,
                     out_dir=out_dir)
    render_app_run(out, result)


@app.command()
@friendly
def study(file: Path = typer.Argument(..., help="study TOML: [base] config + [study] profiles and variants"),
          engine: Optional[str] = typer.Option(None, "--engine", "-e", help="simulate | estimate (default: the base's)"),
          set_: list[str] = SetOpt) -> None:
    """Run every variant of a study, re-time it on every profile, print and write the table."""
    import shlex

    from fedbw.studies import load_study, run_study
    from fedbw.studies.output import rich_table

    spec = load_study(file, set_, engine)
    with _progress(max(v.config.training.rounds for v in spec.variants), spec.variants[0].config.clients.per_round,
                   quiet=False) as progress:
        result = run_study(spec, progress, on_variant=lambda i, n, v: err.print(f"variant {i + 1}/{n}: {v.name}"),
                           command=shlex.join(["fedbw", *sys.argv[1:]]))
    out.print(rich_table(result))
    for name, why in result.stopped_early.items():
        out.print(f"[yellow]{name}:[/] {why}")
    out.print(f"study: {result.study_dir} (study.md, study.json, study.png)")


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    sys.exit(main())
