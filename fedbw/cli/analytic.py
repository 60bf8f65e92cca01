"""Commands answered by the models alone, instantly: estimate, allreduce, and the catalogs."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import typer

from fedbw.cli.common import SetOpt, app, friendly, out


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
    from fedbw.report.terminal import render_estimate

    render_estimate(out, report)


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
    from fedbw.report.terminal import render_allreduce

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
def profiles() -> None:
    """Link profiles, data-center fabrics and client device profiles."""
    from fedbw.report.terminal import render_catalogs

    render_catalogs(out)


@app.command()
@friendly
def models() -> None:
    """Models by name with their parameter counts and per-sample FLOPs."""
    from fedbw.report.terminal import render_models

    render_models(out)
