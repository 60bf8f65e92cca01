"""`fedbw trace show`: look at a link-rate trace file (CSV or mahimahi) before an experiment uses it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from fedbw.cli.common import app, friendly, out

trace_app = typer.Typer(no_args_is_help=True, rich_markup_mode="rich",
                        help="Link-rate trace files (CSV t_s,up_mbps,down_mbps or mahimahi): look at one.")
app.add_typer(trace_app, name="trace")


@trace_app.command("show")
@friendly
def show(file: Path = typer.Argument(..., help="a CSV trace, or a mahimahi file (the uplink; both "
                                               "directions without --down)"),
         down: Optional[Path] = typer.Option(None, "--down", help="the mahimahi downlink file"),
         png: Optional[Path] = typer.Option(None, "--png", help="also draw both directions into this PNG"),
         bin_ms: int = typer.Option(1000, "--bin-ms", help="mahimahi: count delivery opportunities in bins "
                                                           "of this many ms")) -> None:
    """Duration, time-weighted mean, 10th and 90th percentile and a sparkline per direction."""
    from fedbw.report.traces import plot_trace, render_trace
    from fedbw.traces import load_trace

    trace = load_trace(file, down, bin_ms=bin_ms)
    render_trace(out, trace)
    if png is not None:
        out.print(f"wrote {plot_trace(trace, png)}", markup=False, highlight=False)
