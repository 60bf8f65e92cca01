"""`fedbw trace show`: look at a link-rate trace file (CSV or mahimahi) before an experiment uses it;
`fedbw trace availability`: look at (or generate) who is on line when."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from fedbw.cli.common import app, friendly, out

trace_app = typer.Typer(no_args_is_help=True, rich_markup_mode="rich",
                        help="Traces: link rates (CSV t_s,up_mbps,down_mbps or mahimahi) and client availability "
                             "(on-line intervals): look at one, or generate availability.")
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


@trace_app.command("availability")
@friendly
def availability(file: Optional[Path] = typer.Argument(None, help="a CSV of on-line intervals: client,start_s,end_s "
                                                                  "per line (omit it to generate one)"),
                 generate: str = typer.Option("two-state", "--generate",
                                              help="without FILE: two-state (exponential on/off) or diurnal (the "
                                                   "rate of coming back on line follows the day)"),
                 clients: int = typer.Option(100, "--clients", help="generate: how many clients"),
                 on_s: float = typer.Option(1800.0, "--on", help="generate: mean time on line, seconds"),
                 off_s: float = typer.Option(5400.0, "--off", help="generate: mean time off line, seconds"),
                 hours: float = typer.Option(24.0, "--hours", help="generate: the trace's horizon"),
                 seed: int = typer.Option(0, "--seed"),
                 save: Optional[Path] = typer.Option(None, "--save", help="write the (generated) trace as CSV here")
                 ) -> None:
    """Who is on line when: clients, mean share of time on line, mean session and gap, the share of clients
    on line over time (10th/50th/90th percentile and a sparkline)."""
    from fedbw.errors import ConfigError
    from fedbw.report.traces import render_availability
    from fedbw.traces.availability import diurnal, read_availability, two_state, write_availability

    if file is not None:
        trace = read_availability(file)
    elif generate == "two-state":
        trace = two_state(clients, on_s, off_s, 3600.0 * hours, seed)
    elif generate == "diurnal":
        trace = diurnal(clients, on_s, off_s, 3600.0 * hours, seed=seed)
    else:
        raise ConfigError(f"--generate {generate!r}: use two-state or diurnal")
    render_availability(out, trace)
    if save is not None:
        write_availability(save, trace)
        out.print(f"wrote {save}", markup=False, highlight=False)
