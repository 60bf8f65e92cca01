"""Commands that read finished (or interrupted) runs: report, compare."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer

from fedbw.cli.common import app, friendly, out


@app.command()
@friendly
def report(run_dir: Path = typer.Argument(..., help="a run directory (or its records.jsonl)")) -> None:
    """Print the tables of a finished (or interrupted) run."""
    from fedbw.report.terminal import render_records

    render_records(out, run_dir)


@app.command()
@friendly
def compare(run_dirs: list[Path] = typer.Argument(..., help="two or more run directories"),
            json_out: bool = typer.Option(False, "--json")) -> None:
    """Put runs side by side (any engines): round time, comm share, bytes, accuracy, ε, per profile."""
    from fedbw.report.terminal import render_comparison
    from fedbw.results.summary import summarize_run_dir

    summaries = [summarize_run_dir(d) for d in run_dirs]
    if json_out:
        out.print_json(json.dumps([asdict(s) for s in summaries]))
        return
    render_comparison(out, summaries)
