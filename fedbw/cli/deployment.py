"""Commands that touch real sockets: emulate any Flower app, shape links in front of any service."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from fedbw.cli.common import app, friendly, out


@app.command()
@friendly
def emulate(app_dir: Path = typer.Option(..., "--app", help="a Flower app directory (pyproject with \\[tool.flwr.app])"),
            clients: int = typer.Option(2, "--clients", "-n", help="SuperNodes, one shaped link each"),
            profile: str = typer.Option("home-30", "--profile", "-p", help="link profile (`fedbw profiles`)"),
            rounds: Optional[int] = typer.Option(None, "--rounds", help="sets the app's num-server-rounds"),
            run_config: list[str] = typer.Option([], "--run-config", "-c", help="key=value for flwr run"),
            timeout: float = typer.Option(1800.0, "--timeout", help="seconds before the run is stopped"),
            server_link: Optional[str] = typer.Option(None, "--server-link", help="the server's link (`fedbw profiles`)"),
            out_dir: Optional[Path] = typer.Option(None, "--out", help="run directory (default: runs/<app>-emulate-…)"),
            seed: int = typer.Option(0, "--seed", help="seeds the links' jitter"),
            dilation: str = typer.Option("1", "--dilation", help='time dilation K (every emulated second lasts K '
                                         'real ones) or "auto" (K from clients and cores); docs/emulate.md'),
            cap_cpu: bool = typer.Option(True, "--cap-cpu/--no-cap-cpu",
                                         help="under dilation, cap each device to its share of a core"),
            hosts: str = typer.Option("loopback", "--hosts", help='"loopback", or "netns": the SuperLink and each '
                                      'SuperNode on a network host of its own (namespaces; root), a shaper per '
                                      'client host, TLS (docs/multi-host.md)'),
            tls: bool = typer.Option(False, "--tls/--no-tls", help="the loopback SuperLink serves TLS (a CA made "
                                     "for the run); --hosts netns always does"),
            supernode_auth: bool = typer.Option(False, "--supernode-auth/--no-supernode-auth",
                                                help="SuperNode authentication: a key pair per SuperNode, registered "
                                                "with the SuperLink first; needs --tls or --hosts netns")) -> None:
    """Run any Flower app, unmodified, on Flower's Deployment Engine behind per-client shaped links."""
    from fedbw.cli.common import RoundProgress
    from fedbw.engines.emulate.hosts import hosts_option
    from fedbw.engines.foreign_app import read_app
    from fedbw.report.app_run import render_app_run
    from fedbw.runner import run_app

    layout = hosts_option(hosts)
    total = rounds or int(read_app(app_dir.resolve()).get("config", {}).get("num-server-rounds", 1))
    with RoundProgress(total, clients, quiet=False) as progress:
        result = run_app(app_dir, clients, profile, engine="emulate", rounds=rounds, run_config=run_config,
                         timeout_s=timeout, out_dir=out_dir, seed=seed, server_link=server_link,
                         dilation=dilation_option(dilation), cap_cpu=cap_cpu, progress=progress, hosts=layout, tls=tls,
                         supernode_auth=supernode_auth)
    render_app_run(out, result)


def dilation_option(text: str) -> float | str:
    """``--dilation``: "auto" or a number (range checked with the config's ``emulate.dilation``)."""
    from fedbw.errors import ConfigError

    if text.strip().lower() == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f'--dilation must be a number (e.g. 4) or "auto", got {text!r}') from None


@app.command()
@friendly
def simulate(app_dir: Path = typer.Option(..., "--app", help="a Flower app directory (pyproject with \\[tool.flwr.app])"),
             clients: int = typer.Option(2, "--clients", "-n", help="virtual SuperNodes, one link each"),
             profile: str = typer.Option("home-30", "--profile", "-p", help="link profile (`fedbw profiles`)"),
             rounds: Optional[int] = typer.Option(None, "--rounds", help="sets the app's num-server-rounds"),
             run_config: list[str] = typer.Option([], "--run-config", "-c", help="key=value for the app's config"),
             server_link: Optional[str] = typer.Option(None, "--server-link", help="the server's link (`fedbw profiles`)"),
             calibration: Optional[Path] = typer.Option(None, "--calibration", help="`fedbw calibrate` output"),
             out_dir: Optional[Path] = typer.Option(None, "--out", help="run directory (default: runs/<app>-simulate-…)"),
             seed: int = typer.Option(0, "--seed")) -> None:
    """Run any Flower app, unmodified, in Flower's Simulation Engine on a virtual clock: its messages on
    each client's link, the server's link and Flower's deployment costs."""
    from fedbw.cli.common import RoundProgress
    from fedbw.engines.foreign_app import read_app
    from fedbw.report.app_run import render_app_simulation
    from fedbw.runner import run_app

    total = rounds or int(read_app(app_dir.resolve()).get("config", {}).get("num-server-rounds", 1))
    with RoundProgress(total, clients, quiet=False) as progress:
        result = run_app(app_dir, clients, profile, engine="simulate", rounds=rounds, run_config=run_config,
                         out_dir=out_dir, seed=seed, server_link=server_link,
                         calibration=str(calibration) if calibration else None, progress=progress)
    render_app_simulation(out, result)


def traced_routes(routes: list[Any], trace: Any, until_s: float) -> list[Any]:
    """Every route's link replaying ``trace`` (a :class:`fedbw.traces.RateTrace`) in each direction, looped
    until ``until_s`` (the shaper then holds the last rate); latency and jitter stay the link's, and its
    own rates apply only before the trace's first step."""
    from dataclasses import replace

    up, down = trace.steps("up", until_s), trace.steps("down", until_s)
    return [replace(r, link=replace(r.link, up_trace=up, down_trace=down)) for r in routes]


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
                                                  help="listen on a non-loopback address"),
          server_link: Optional[str] = typer.Option(None, "--server-link",
                                                    help="the upstream's own link, shared by every client "
                                                         "(`fedbw profiles`: server links)"),
          trace: Optional[Path] = typer.Option(None, "--trace", help="a shipped trace's name or a link-rate trace file (CSV: both directions; "
                                                                      "mahimahi: the uplink) every client's link "
                                                                      "replays, looping (docs/traces.md)"),
          trace_down: Optional[Path] = typer.Option(None, "--trace-down", help="a mahimahi trace for the downlink "
                                                                                "(with a mahimahi --trace)"),
          trace_hours: float = typer.Option(6.0, "--trace-hours", min=0.01,
                                            help="loop the trace this long, then hold its last rate")) -> None:
    """Shape real TCP links in front of any service: one port per client, rate/latency/jitter each way."""
    from fedbw.links import profile_link
    from fedbw.shaper import run_shaper_blocking
    from fedbw.shaper.cli_support import describe_routes, describe_totals, routes_from_options

    if trace_down is not None and trace is None:
        from fedbw.errors import ConfigError

        raise ConfigError("--trace-down pairs with a mahimahi --trace (the uplink); give --trace too")
    routes = routes_from_options(listen=listen, upstream=upstream, profile=profile, profile_lookup=lambda name: profile_link(name).shaper_spec(),
                                 clients=clients, map_file=map_file, up_mbps=up_mbps, down_mbps=down_mbps,
                                 rtt_ms=rtt_ms, jitter_ms=jitter_ms)
    if trace is not None:
        from fedbw.catalog.traces import trace_path
        from fedbw.traces import load_trace

        routes = traced_routes(routes, load_trace(trace_path(trace), trace_down), trace_hours * 3600)

    def ready(shaper: Any) -> None:
        for line in describe_routes(routes, shaper.ports):
            out.print(line, highlight=False)
        out.print("shaping — Ctrl-C to stop", style="dim")

    from fedbw.links import server_shaper_spec

    shared = server_shaper_spec(server_link) if server_link else None
    snap = run_shaper_blocking(routes, ledger_path=ledger, allow_non_loopback=allow_non_loopback, on_ready=ready,
                               shared_link=shared)
    for line in describe_totals(snap):
        out.print(line, highlight=False)


@app.command()
@friendly(interrupted="no calibration written (a file already at --out is left as it was).")
def calibrate(out_file: Path = typer.Option(Path("fedbw-calibration.toml"), "--out", "-o",
                                            help="where to write the calibration file (TOML); its measured "
                                                 "messages go beside it (NAME.messages.jsonl)"),
              rounds: int = typer.Option(12, "--rounds", min=2, help="rounds per measured run: more, tighter intervals "
                                                                     "(with 4, most constants cannot show their worth)"),
              dilation: str = typer.Option("auto", "--dilation",
                                           help='"auto": dilated by 2, the device capped to one core, where '
                                                'cgroups allow; or K (1 = undilated)'),
              from_messages: Optional[Path] = typer.Option(
                  None, "--from-messages", help="fit again from an earlier calibration's measured messages "
                                                "(NAME.messages.jsonl) instead of measuring: seconds, no Flower "
                                                "process"),
              measure_secagg: bool = typer.Option(
                  False, "--measure-secagg", help="with --from-messages: time SecAgg+'s crypto again now (about "
                                                  "35 s, in this process) instead of taking it from the messages' "
                                                  "run")) -> None:
    """Measure Flower's own costs on this machine (real Flower processes, one client at a time on unshaped
    loopback, then a shaped run) and write them as a calibration file for
    `--calibration` (about 30 minutes on 2 cores), with every measured message beside it."""
    import shlex
    import sys

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from fedbw.calibrate.measure import (calibration_of, measure, messages_path, read_measurements,
                                         write_measurements)
    from fedbw.calibration.file import write_calibration
    from fedbw.cli.common import err
    from fedbw.report.calibration import render_calibration

    command = shlex.join(["fedbw", *sys.argv[1:]])
    if measure_secagg and from_messages is None:
        raise typer.BadParameter("--measure-secagg goes with --from-messages (a full calibration times SecAgg+'s "
                                 "crypto anyway)", param_hint="--measure-secagg")
    if from_messages is not None:
        measured = read_measurements(from_messages)
        if measure_secagg:
            from fedbw.fl.privacy.costs import measure_secagg_costs

            measured.secagg = measure_secagg_costs(repeats=5).to_json()
    else:
        with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=err,
                      transient=True) as bar:
            task = bar.add_task("calibrating", total=1)

            def step(what: str, i: int, n: int) -> None:
                bar.update(task, description=what, completed=i, total=n)

            measured = measure(rounds=rounds, step=step, command=command, dilation=dilation_option(dilation))
        # the measurements first: a fit that fails later leaves them, and --from-messages fits them again
        kept = write_measurements(messages_path(out_file), measured)
        out.print(f"measured messages: {kept} ({len(measured.messages)} messages)")
    cal = calibration_of(measured, command=command)
    path = write_calibration(out_file, cal)
    render_calibration(out, cal)
    out.print(f"calibration: {path} (use it with --calibration {path})")
