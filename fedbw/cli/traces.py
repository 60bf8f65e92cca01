"""`fedbw trace show`: look at a link-rate trace file (CSV or mahimahi) before an experiment uses it;
`fedbw trace availability`: look at (or generate) who is on line when."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from fedbw.cli.common import app, friendly, out

trace_app = typer.Typer(no_args_is_help=True, rich_markup_mode="rich",
                        help="Traces: link rates (CSV t_s,up_mbps,down_mbps or mahimahi) and client availability "
                             "(on-line intervals): look at one, draw a synthetic one like it, or generate availability.")
app.add_typer(trace_app, name="trace")


@trace_app.command("show")
@friendly
def show(file: Path = typer.Argument(..., help="a shipped trace's name (`fedbw profiles`), a CSV trace, or a "
                                               "mahimahi file (the uplink; both directions without --down)"),
         down: Optional[Path] = typer.Option(None, "--down", help="the mahimahi downlink file"),
         png: Optional[Path] = typer.Option(None, "--png", help="also draw both directions into this PNG"),
         bin_ms: int = typer.Option(1000, "--bin-ms", help="mahimahi: count delivery opportunities in bins "
                                                           "of this many ms")) -> None:
    """Duration, time-weighted mean, 10th and 90th percentile and a sparkline per direction."""
    from fedbw.catalog.traces import trace_path
    from fedbw.report.traces import plot_trace, render_trace
    from fedbw.traces import load_trace

    trace = load_trace(trace_path(file), down, bin_ms=bin_ms)
    render_trace(out, trace)
    if png is not None:
        out.print(f"wrote {plot_trace(trace, png)}", markup=False, highlight=False)


@trace_app.command("generate")
@friendly
def generate(like: Path = typer.Option(..., "--like", help="the measured trace whose statistics to draw from: a "
                                                           "CSV, or a mahimahi file (the uplink)"),
             down: Optional[Path] = typer.Option(None, "--down", help="the mahimahi downlink file"),
             save: Path = typer.Option(..., "--save", help="write the synthetic trace here (CSV t_s,up_mbps,down_mbps)"),
             seconds: float = typer.Option(600.0, "--seconds", min=2.0, help="the synthetic trace's length"),
             seed: int = typer.Option(0, "--seed"),
             bin_ms: int = typer.Option(1000, "--bin-ms", help="mahimahi: count delivery opportunities in bins "
                                                               "of this many ms")) -> None:
    """A synthetic trace with a measured one's statistics (mean, spread and persistence of the rate, outages;
    docs/traces.md): one you may share where the measured trace's licence does not let you."""
    from fedbw.errors import ConfigError
    from fedbw.files.atomic import write_text_atomic
    from fedbw.report.traces import render_shape, render_trace
    from fedbw.traces import load_trace
    from fedbw.traces.csv_trace import csv_text
    from fedbw.traces.synthetic import DEFAULT_STEP_S, fit_shape, synthesize

    source = load_trace(like, down, bin_ms=bin_ms)
    try:
        shapes = {d: fit_shape(source.series(d), DEFAULT_STEP_S) for d in ("up", "down")}
    except ValueError as exc:
        raise ConfigError(f"trace {like}: {exc}") from None
    render_shape(out, source, shapes)
    trace = synthesize(save.stem, shapes["up"], shapes["down"], seconds, seed,
                       source=f"synthetic (seed {seed}), with the statistics of {source.source}")
    write_text_atomic(save, csv_text(trace, DEFAULT_STEP_S, f"{trace.source}\nmade by fedbw trace generate"))
    render_trace(out, trace)
    out.print(f"wrote {save}", markup=False, highlight=False)


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
