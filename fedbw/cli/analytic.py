"""Commands answered by the models alone, instantly: estimate and the catalogs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from fedbw.cli.common import CalibrationOpt, SetOpt, app, flag_overrides, friendly, out


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
             set_: list[str] = SetOpt, calibration: Optional[Path] = CalibrationOpt,
             json_out: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """Analytic answer, instantly: round time per uplink profile beside AllReduce on data-center fabrics."""
    from fedbw.compare import estimate_report

    report = estimate_report(config, model=model, profiles=profile, fabrics=fabric, ranks=ranks,
                             clients_per_round=clients_per_round, secagg=secagg, codec=codec,
                             overrides=[*set_, *flag_overrides(calibration=calibration)])
    if json_out:
        out.print_json(json.dumps(report.to_json()))
        return
    from fedbw.report.terminal import render_estimate

    render_estimate(out, report)


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
