"""Commands that run experiment configs: validate, run, sweep, study."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import typer

from fedbw.cli.common import CalibrationOpt, RoundProgress, SetOpt, app, err, flag_overrides, friendly, load, out


@app.command()
@friendly
def validate(config: Path = typer.Argument(..., help="experiment TOML"), set_: list[str] = SetOpt) -> None:
    """Check a config without running it; prints the resolved plan in one line."""
    from fedbw.plan import build_plan

    cfg = load(config, set_)
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
        calibration: Optional[Path] = CalibrationOpt,
        json_out: bool = typer.Option(False, "--json", help="print the round records as JSON")) -> None:
    """Run an experiment config; records, config and environment go to a new run directory."""
    from fedbw.report.terminal import render_run
    from fedbw.runner import run_experiment

    cfg = load(config, set_, engine, calibration)
    with RoundProgress(cfg.training.rounds, cfg.clients.per_round, quiet=json_out) as progress:
        result = run_experiment(cfg, progress)
    if json_out:
        out.print_json(json.dumps([r.to_json() for r in result.rounds]))
        return
    render_run(out, cfg, result)


@app.command()
@friendly
def sweep(config: Path = typer.Argument(..., help="experiment TOML"),
          param: str = typer.Option(..., "--param", help="config key to vary, e.g. network.overrides... or "
                                    "clients.per_round, compression.codec, up_mbps"),
          values: Optional[str] = typer.Option(None, "--values", help="comma-separated values"),
          range_: Optional[str] = typer.Option(None, "--range", help="start:stop:count (inclusive, evenly spaced)"),
          set_: list[str] = SetOpt,
          calibration: Optional[Path] = CalibrationOpt,
          json_out: bool = typer.Option(False, "--json")) -> None:
    """Vary one parameter with the analytic engine and tabulate round time and comm share."""
    from fedbw.compare import run_sweep, sweep_values
    from fedbw.report.terminal import render_sweep

    points = sweep_values(values, range_)
    rows = run_sweep(config, param, points, [*set_, *flag_overrides(calibration=calibration)])
    if json_out:
        out.print_json(json.dumps([asdict(r) for r in rows]))
        return
    render_sweep(out, param, rows)


@app.command()
@friendly
def study(file: Path = typer.Argument(..., help="study TOML: [base] config + [study] profiles and variants"),
          engine: Optional[str] = typer.Option(None, "--engine", "-e", help="simulate | estimate (default: the base's)"),
          set_: list[str] = SetOpt, calibration: Optional[Path] = CalibrationOpt,
          result_copy: Optional[Path] = typer.Option(None, "--result", help="also copy study.json here (e.g. "
                                                     "benchmarks/results/privacy-overhead.json, for `fedbw docs`)"),
          ) -> None:
    """Run every variant of a study, re-time it on every profile, print and write the table."""
    import shlex

    from fedbw.studies import load_study, run_study
    from fedbw.report.study import rich_table

    spec = load_study(file, [*set_, *flag_overrides(calibration=calibration)], engine)
    with RoundProgress(max(v.config.training.rounds for v in spec.variants),
                       spec.variants[0].config.clients.per_round, quiet=False) as progress:
        result = run_study(spec, progress, on_variant=lambda i, n, v: err.print(f"variant {i + 1}/{n}: {v.name}"),
                           command=shlex.join(["fedbw", *sys.argv[1:]]))
    out.print(rich_table(result))
    for name, why in result.stopped_early.items():
        out.print(f"[yellow]{name}:[/] {why}")
    out.print(f"study: {result.study_dir} (study.md, study.json, study.png)")
    if result_copy is not None:
        import shutil

        result_copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(result.study_dir / "study.json", result_copy)
        out.print(f"study.json copied to {result_copy}")
