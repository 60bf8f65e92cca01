"""Commands that read finished (or interrupted) runs: report, compare."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from fedbw.cli.common import app, friendly, out, warn


TargetOpt = typer.Option(0.8, "--target-accuracy", min=0.0, max=1.0,
                         help="accuracy (0..1) for the 'time to target' row and the accuracy chart's line")


@app.command()
@friendly
def report(paths: list[Path] = typer.Argument(..., help="a run directory (or its records.jsonl) or a sweep "
                                              "directory; several with --out"),
           out_dir: Optional[Path] = typer.Option(None, "--out", help="where report.html and figures/ go "
                                                  "(default: the run or sweep directory)"),
           target: float = TargetOpt,
           html_page: bool = typer.Option(True, "--html/--no-html", help="write report.html and its PNGs")) -> None:
    """Print a run's (or sweep's) tables and write report.html: a self-contained page with every figure."""
    import shlex
    import sys

    from fedbw.compare import load_runs
    from fedbw.errors import ConfigError
    from fedbw.report.terminal import render_comparison, render_records

    runset = load_runs(paths)
    warn(runset.notes)
    if len(runset.runs) == 1 and not runset.sweeps:
        run = runset.runs[0]
        render_records(out, run)
        from fedbw.report.plots import plot_run

        for p in plot_run(run.path, run.clients, run.rounds, run.path.name):
            out.print(f"plot: {p}", highlight=False)
    else:
        render_comparison(out, runset.runs, target)
    if not html_page:
        return
    if out_dir is None:
        if len(paths) > 1:
            raise ConfigError("a report of several runs or sweeps needs --out DIR (where report.html goes)")
        out_dir = paths[0] if paths[0].is_dir() else paths[0].parent
    from fedbw.report.html import write_report

    title = (f"fedbw report: {runset.sweeps[0][1].name} sweep" if len(runset.sweeps) == 1 and len(paths) == 1
             else f"fedbw report: {runset.runs[0].label}" if len(runset.runs) == 1 else "fedbw report")
    rep = write_report(runset, out_dir, target, title, shlex.join(["fedbw", *sys.argv[1:]]))
    warn([n for r in runset.runs for n in r.notes if n not in runset.notes])
    out.print(f"report: {rep.html_path} ({len(rep.figures)} figures, PNGs in {rep.html_path.parent / 'figures'})",
              highlight=False)


@app.command()
@friendly
def compare(paths: list[Path] = typer.Argument(..., help="run directories and/or sweep directories (a sweep "
                                               "stands for its finished points)"),
            target: float = TargetOpt,
            json_out: bool = typer.Option(False, "--json")) -> None:
    """Put runs side by side (any engines): round time and its parts, comm share, bytes, ε, accuracy, time to a
    target accuracy, the host's share, FL round ÷ AllReduce per fabric."""
    from fedbw.compare import comparison_json, load_runs
    from fedbw.report.terminal import render_comparison

    runset = load_runs(paths)
    warn(runset.notes)
    if json_out:
        out.print_json(json.dumps(comparison_json(runset.runs, target)))
        return
    render_comparison(out, runset.runs, target)


@app.command()
@friendly
def docs(check: bool = typer.Option(False, "--check", help="only say which docs differ from their data (exit 1)"),
         stale: bool = typer.Option(False, "--stale", help="only list the results another model version made, "
                                                             "each with the command that writes it again"),
         root: Path = typer.Option(Path("."), "--root", help="the repository (with docs/ and benchmarks/results/)")) -> None:
    """Regenerate every table in docs/ from the data in the repo (benchmark JSON, the catalog)."""
    from fedbw.errors import ConfigError, RunError
    from fedbw.report.docs import regenerate

    if not (root / "docs").is_dir():
        raise ConfigError(f"{root.resolve()} has no docs/ folder; run from the repository or pass --root")
    if stale:
        from fedbw.report.docs import render_stale

        out.print(render_stale(root), highlight=False)
        return
    stale = regenerate(root, check=check)
    if check and stale:
        raise RunError("docs out of date with their data: " + ", ".join(str(p) for p in stale)
                       + "; run `fedbw docs` and commit")
    for p in stale:
        out.print(f"regenerated {p}")
    if not stale:
        out.print("docs match their data")
