"""Any Flower app's run: ``fedbw emulate --app`` (wall clock) and ``fedbw simulate --app`` (virtual clock)."""

from __future__ import annotations

from rich.console import Console

from fedbw.engines.emulate.foreign import AppRun
from fedbw.engines.simulate.foreign import AppSimulation
from fedbw.report.format import fmt_bytes, fmt_s
from fedbw.report.tables import HOST_CAPTION, by_profile_table, fmt_host, host_summary, new_table, rounds_table


def render_app_run(console: Console, run: AppRun) -> None:
    """Per-client link totals and per-round times of a ``fedbw emulate --app`` run."""
    res = run.result
    t = new_table("Per client (shaped links; bytes as carried on the wire, polling included)",
                  ("client", "profile", "up", "down", "messages", "t_down", "t_up", "framework + app"), left=("profile",))
    for c in res.clients:
        msgs = res.for_client(c.client_id)
        done = [m for m in msgs if m.span.complete]
        fw = sum((m.span.app_s or 0.0) for m in done)
        t.add_row(str(c.client_id), c.profile, fmt_bytes(res.bytes_up[c.client_id]),
                  fmt_bytes(res.bytes_down[c.client_id]), str(len(done)),
                  f"{sum(m.down.duration_s for m in done):.2f} s", f"{sum(m.up.duration_s for m in done):.2f} s",
                  f"{fw:.2f} s")
    console.print(t)
    clock = f"emulated clock, dilation {res.dilation:g}×" if res.dilation > 1 else "wall clock"
    r = new_table(f"Per round ({clock})", ("round", "clients", "round time", "network (critical path)",
                                          "framework + app", "up total", "down total", "host"))
    for rec in run.rounds:
        r.add_row(str(rec.round), str(rec.num_clients), f"{rec.round_time_s:.2f} s", f"{rec.comm_time_s:.2f} s",
                  f"{rec.framework_time_s:.2f} s", fmt_bytes(rec.bytes_up_total), fmt_bytes(rec.bytes_down_total),
                  fmt_host(rec))
    r.caption = HOST_CAPTION
    console.print(r)
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
