"""Commands that touch real sockets: emulate any Flower app, shape links in front of any service."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from fedbw.cli.common import app, friendly, out


@app.command()
@friendly
def emulate(app_dir: Path = typer.Option(..., "--app", help="a Flower app directory (pyproject with [tool.flwr.app])"),
            clients: int = typer.Option(2, "--clients", "-n", help="SuperNodes, one shaped link each"),
            profile: str = typer.Option("home-30", "--profile", "-p", help="link profile (`fedbw profiles`)"),
            rounds: Optional[int] = typer.Option(None, "--rounds", help="sets the app's num-server-rounds"),
            run_config: list[str] = typer.Option([], "--run-config", "-c", help="key=value for flwr run"),
            timeout: float = typer.Option(1800.0, "--timeout", help="seconds before the run is stopped"),
            out_dir: Optional[Path] = typer.Option(None, "--out", help="write records.jsonl and logs here")) -> None:
    """Run any Flower app, unmodified, on Flower's Deployment Engine behind per-client shaped links."""
    from fedbw.engines.emulate import run_app
    from fedbw.report.app_run import render_app_run

    result = run_app(app_dir, clients, profile, rounds=rounds, run_config=run_config, timeout_s=timeout,
                     out_dir=out_dir)
    render_app_run(out, result)


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
                                                  help="listen on a non-loopback address")) -> None:
    """Shape real TCP links in front of any service: one port per client, rate/latency/jitter each way."""
    from fedbw.links import profile_link
    from fedbw.shaper import run_shaper_blocking
    from fedbw.shaper.cli_support import describe_routes, describe_totals, routes_from_options

    routes = routes_from_options(listen=listen, upstream=upstream, profile=profile, profile_lookup=lambda name: profile_link(name).shaper_spec(),
                                 clients=clients, map_file=map_file, up_mbps=up_mbps, down_mbps=down_mbps,
                                 rtt_ms=rtt_ms, jitter_ms=jitter_ms)

    def ready(shaper: Any) -> None:
        for line in describe_routes(routes, shaper.ports):
            out.print(line, highlight=False)
        out.print("shaping — Ctrl-C to stop", style="dim")

    snap = run_shaper_blocking(routes, ledger_path=ledger, allow_non_loopback=allow_non_loopback, on_ready=ready)
    for line in describe_totals(snap):
        out.print(line, highlight=False)
