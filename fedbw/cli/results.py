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


@app.command()
@friendly
def docs(check: bool = typer.Option(False, "--check", help="only say which docs differ from their data (exit 1)"),
         root: Path = typer.Option(Path("."), "--root", help="the repository (with docs/ and benchmarks/results/)")) -> None:
    """Regenerate every table in docs/ from the data in the repo (benchmark JSON, the catalog)."""
    from fedbw.errors import ConfigError, RunError
    from fedbw.report.docs import regenerate

    if not (root / "docs").is_dir():
        raise ConfigError(f"{root.resolve()} has no docs/ folder; run from the repository or pass --root")
    stale = regenerate(root, check=check)
    if check and stale:
        raise RunError("docs out of date with their data: " + ", ".join(str(p) for p in stale)
                       + "; run `fedbw docs` and commit")
    for p in stale:
        out.print(f"regenerated {p}")
    if not stale:
        out.print("docs match their data")
