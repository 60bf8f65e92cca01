"""Any Flower app's run: ``fedbw emulate --app`` (wall clock) and ``fedbw simulate --app`` (virtual clock)."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console

from fedbw.engines.emulate.federation import EmulationResult
from fedbw.engines.emulate.foreign import AppRun
from fedbw.engines.simulate.foreign import AppSimulation
from fedbw.report.format import fmt_bytes, fmt_s
from fedbw.report.tables import (HOST_CAPTION, Col, FitTable, by_profile_table, fmt_host, host_summary,
                                 rounds_table)
from fedbw.results.records import RoundRecord


#: Where a column the app run's tables leave out at a narrow width can be read.
APP_LEFT_OUT = "a wider terminal shows them"


def app_clients_table(res: EmulationResult) -> FitTable:
    """Per-client link totals of a ``fedbw emulate --app`` run. Key columns, never cut: client, profile, up
    (the bytes its uplink carried) and t_up (the time they took); where the terminal is too narrow the others
    leave in this order: messages, framework + app, t_down, down."""
    t = FitTable("Per client (shaped links; bytes as carried on the wire, polling included)",
                 [Col("client", key=True), Col("profile", key=True, left=True), Col("up", key=True), Col("down"),
                  Col("messages"), Col("t_down"), Col("t_up", key=True), Col("framework + app")],
                 drop=("messages", "framework + app", "t_down", "down"), left_out=APP_LEFT_OUT)
    for c in res.clients:
        done = [m for m in res.for_client(c.client_id) if m.span.complete]
        fw = sum((m.span.app_s or 0.0) for m in done)
        t.add_row(str(c.client_id), c.profile, fmt_bytes(res.bytes_up[c.client_id]),
                  fmt_bytes(res.bytes_down[c.client_id]), str(len(done)),
                  f"{sum(m.down.duration_s for m in done):.2f} s", f"{sum(m.up.duration_s for m in done):.2f} s",
                  f"{fw:.2f} s")
    return t


def app_rounds_table(rounds: Sequence[RoundRecord], dilation: float) -> FitTable:
    """Per-round times of a ``fedbw emulate --app`` run. Key columns, never cut: round, round time, network
    (critical path) (its communication time) and up total; where the terminal is too narrow the others leave
    in this order: down total, clients, framework + app, host (the line below the table says which rounds were
    host-bound)."""
    clock = f"emulated clock, dilation {dilation:g}×" if dilation > 1 else "wall clock"
    t = FitTable(f"Per round ({clock})",
                 [Col("round", key=True), Col("clients"), Col("round time", key=True),
                  Col("network (critical path)", key=True), Col("framework + app"), Col("up total", key=True),
                  Col("down total"), Col("host")],
                 drop=("down total", "clients", "framework + app", "host"), caption=HOST_CAPTION,
                 left_out=APP_LEFT_OUT)
    for rec in rounds:
        t.add_row(str(rec.round), str(rec.num_clients), f"{rec.round_time_s:.2f} s", f"{rec.comm_time_s:.2f} s",
                  f"{rec.framework_time_s:.2f} s", fmt_bytes(rec.bytes_up_total), fmt_bytes(rec.bytes_down_total),
                  fmt_host(rec))
    return t


def render_app_run(console: Console, run: AppRun) -> None:
    """Per-client link totals and per-round times of a ``fedbw emulate --app`` run."""
    res = run.result
    console.print(app_clients_table(res))
    console.print(app_rounds_table(run.rounds, res.dilation))
    if (line := host_summary(run.rounds)) is not None:
        console.print(line)
    if res.cpu_note:
        console.print(f"[yellow]note[/]: {res.cpu_note}")
    starts = [m.span.startup_s for m in res.messages if m.span.startup_s is not None]
    if starts:
        console.print(f"ClientApp process start (SuperExec poll + process start-up), per message: "
                      f"median {sorted(starts)[len(starts) // 2]:.2f} s over {len(starts)} messages. "
                      f"Set-up {res.startup_s:.1f} s, run {res.run_wall_s:.1f} s, peak RSS of Flower's processes "
                      f"{fmt_bytes(res.peak_rss_bytes or 0)}.")
    for issue in res.issues:
        console.print(f"[yellow]warning[/]: {issue}")
    if res.dropped:
        console.print(f"dropped (SuperNode killed): clients {res.dropped}")
    if run.out_dir is not None:
        console.print(f"records and logs: {run.out_dir}")


def render_app_simulation(console: Console, run: AppSimulation) -> None:
    """Rounds and per-profile times of a ``fedbw simulate --app`` run, and what the model assumed."""
    console.print(rounds_table(run.rounds, "Rounds (virtual clock: links, server link, Flower's deployment costs)"))
    console.print(by_profile_table(run.clients, "Per client and round, by link profile (means)"))
    if run.clientapp_load_s is not None:
        console.print(f"ClientApp process start and app load assumed for this app: {fmt_s(run.clientapp_load_s)} "
                      f"per message (fedbw's calibration, shifted by this app's import time); compute = the app's "
                      f"own time on each message.")
    console.print(f"records: {run.run_dir}/records.jsonl")
