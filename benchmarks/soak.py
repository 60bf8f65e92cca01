"""Soak: N emulated clients × R rounds with SecAgg+, counting what the run holds after every round.

Usage: .venv/bin/python benchmarks/soak.py [--clients 16] [--rounds 20] [--dilation auto] [--out FILE]

fedbw's own apps on the Deployment Engine behind the shaper (`fedbw run --engine emulate`), synthetic
compute, SecAgg+ on. After each round ends (the round's records are on disk) it counts, over every
process the run started (found by a marker in their environment: fedbw/processes/census.py), the
live processes, their open file descriptors, threads and resident memory, and this process's own fds
and threads; once the run is over it counts again after the processes had their time to exit. Leaks
show as growth from round to round, or as anything left at the end. Writes the rows and the verdicts
into benchmarks/results/soak.json (atomically) and prints a table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

for _k, _v in {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1", "RAY_USAGE_STATS_ENABLED": "0"}.items():
    os.environ.setdefault(_k, _v)

from fedbw.processes.census import MARKER_ENV, Census, mark_this_process, take_census  # noqa: E402

#: How long the processes of a finished run get to exit before the final count.
SETTLE_S = 20.0
#: The Flower run's time limit per round (16 SecAgg+ clients take about 5 min a round on 2 cores).
ROUND_BUDGET_S = 900.0
#: Memory growth allowed from the end of round 2 to the end of the last round (SuperLink, SuperNodes,
#: shaper, ServerApp: the processes that live for the whole run).
RSS_GROWTH_BOUND = 0.25


def soak_config(out_dir: Path, clients: int, rounds: int, dilation: float | str) -> Any:
    from fedbw.config import config_from_dict

    return config_from_dict({
        "name": f"soak-{clients}x{rounds}", "engine": "emulate", "seed": 0, "output_dir": str(out_dir),
        "clients": {"total": clients, "per_round": clients, "compute": "synthetic"},
        "training": {"rounds": rounds}, "network": {"profile": "home-80"},
        "privacy": {"secagg": {"enabled": True, "num_shares": 3, "reconstruction_threshold": 2}},
        # emulate's default 30 min for the whole run is a few rounds of 16 SecAgg+ clients on 2 cores
        "emulate": {"dilation": dilation, "keep_logs": True, "timeout_s": ROUND_BUDGET_S * rounds},
    })


def soak(clients: int, rounds: int, dilation: float | str, out_dir: Path,
         on_round: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run the soak; returns the per-round counts, the final count and the verdicts.

    ``status`` is "complete", "interrupted" (Ctrl-C, SIGTERM: the runner stops every process it started)
    or "failed" (the run's error); a soak that ended early still counts what was left and returns the
    rounds it got, ``stopped`` saying why. ``on_round`` gets the result so far (status "running") after
    every round: the CLI writes it, so even a killed soak keeps its rows."""
    from fedbw.errors import RunError
    from fedbw.runner import run_experiment

    marker = mark_this_process()
    before = take_census(marker)
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()

    def result_so_far(after: Census, status: str, stopped: str | None = None) -> dict[str, Any]:
        return {"clients": clients, "rounds": rounds, "dilation": dilation, "secagg": True,
                "wall_s": round(time.perf_counter() - t0, 1), "rounds_recorded": len(rows), "status": status,
                "stopped": stopped, "before": before.as_dict(), "per_round": rows, "after": after.as_dict(),
                "verdicts": verdicts(before, rows, after)}

    def on_progress(round_index: int, done: int, total: int) -> None:
        if done == total and (not rows or rows[-1]["round"] != round_index):
            c = take_census(marker)
            rows.append({"round": round_index, "t_s": round(time.perf_counter() - t0, 2), **c.as_dict()})
            if on_round is not None:  # "after" is this round's count until the run is over
                on_round(result_so_far(c, "running"))

    status, stopped, recorded = "complete", None, None
    try:
        try:
            result = run_experiment(soak_config(out_dir, clients, rounds, dilation), progress=on_progress)
            recorded = len(result.rounds)
        except KeyboardInterrupt as exc:
            status, stopped = "interrupted", f"{exc or 'Ctrl-C'} after {len(rows)} of {rounds} rounds"
        except RunError as exc:  # the run failed (its processes are stopped): keep what it counted
            status, stopped = "failed", f"after {len(rows)} of {rounds} rounds: {str(exc).splitlines()[0]}"
        wall_s = time.perf_counter() - t0
        deadline = time.monotonic() + SETTLE_S
        while (after := take_census(marker)).processes and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        os.environ.pop(MARKER_ENV, None)  # processes started later are not this run's
    run_dirs = sorted(p for p in out_dir.iterdir() if p.is_dir())  # the run's own directory (one per soak)
    return {**result_so_far(after, status, stopped), "wall_s": round(wall_s, 1),
            "rounds_recorded": len(rows) if recorded is None else recorded,
            "run_dir": str(run_dirs[-1]) if run_dirs else None}


def verdicts(before: Census, rows: list[dict[str, Any]], after: Census) -> dict[str, Any]:
    """What counts as a leak: anything left after the run, or growth between rounds beyond a bound."""
    later = rows[1:] if len(rows) > 1 else rows
    first, last = (later[0], later[-1]) if later else ({}, {})
    # the processes that live for the whole run (ClientApps come and go with each message)
    growth = ((last["rss_long_lived_bytes"] / first["rss_long_lived_bytes"] - 1)
              if later and first["rss_long_lived_bytes"] else None)
    own_fds_growth = (last["own_fds"] - first["own_fds"]) if later else 0
    own_threads_growth = (last["own_threads"] - first["own_threads"]) if later else 0
    return {
        "processes_left": after.processes,
        # fedbw's own fds and threads: opened once (lazy imports, caches) is not a leak; growing per round
        # is, and so is holding more after the run than while it ran
        "own_fds_after_minus_start": after.own_fds - before.own_fds,
        "own_threads_after_minus_start": after.own_threads - before.own_threads,
        "own_fds_growth_round2_to_last": own_fds_growth,
        "own_threads_growth_round2_to_last": own_threads_growth,
        "fds_growth_round2_to_last": (last["fds"] - first["fds"]) if later else None,
        "threads_growth_round2_to_last": (last["threads"] - first["threads"]) if later else None,
        "processes_growth_round2_to_last": (last["processes"] - first["processes"]) if later else None,
        "rss_growth_round2_to_last": None if growth is None else round(growth, 4),
        "rss_growth_bound": RSS_GROWTH_BOUND,
        "ok": after.processes == 0 and own_fds_growth <= 0 and own_threads_growth <= 0
        and (not rows or (after.own_fds <= rows[0]["own_fds"] and after.own_threads <= rows[0]["own_threads"]))
        and (growth is None or growth <= RSS_GROWTH_BOUND),
    }


def write_result(out: Path, run: dict[str, Any], started: str, load0: tuple[float, float, float],
                 command: str) -> dict[str, Any]:
    """The soak's JSON (without the temporary run directory), written atomically; returns it."""
    from fedbw.files.atomic import write_json_atomic

    doc = {"schema": "fedbw.soak", "started": started, "command": command,
           "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                       "python": platform.python_version(), "loadavg_start": list(load0),
                       "loadavg_end": list(os.getloadavg())},
           **{k: v for k, v in run.items() if k != "run_dir"}}
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, doc, indent=1)
    return doc


def _table(doc: dict[str, Any]) -> str:
    head = (f"{'round':>5} {'t_s':>8} {'procs':>5} {'fds':>5} {'threads':>7} {'rss_MiB':>8} {'long_MiB':>8} "
            f"{'own_fds':>7} {'own_thr':>7}")
    lines = [head]
    for r in doc["per_round"]:
        lines.append(f"{r['round']:>5} {r['t_s']:>8.1f} {r['processes']:>5} {r['fds']:>5} {r['threads']:>7} "
                     f"{r['rss_bytes'] / 2**20:>8.0f} {r['rss_long_lived_bytes'] / 2**20:>8.0f} {r['own_fds']:>7} "
                     f"{r['own_threads']:>7}")
    a = doc["after"]
    lines.append(f"{'after':>5} {'':>8} {a['processes']:>5} {a['fds']:>5} {a['threads']:>7} "
                 f"{a['rss_bytes'] / 2**20:>8.0f} {a['rss_long_lived_bytes'] / 2**20:>8.0f} {a['own_fds']:>7} "
                 f"{a['own_threads']:>7}")
    return "\n".join(lines)


def main() -> int:
    from fedbw.errors import ConfigError

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--dilation", default="auto", help='a number from 1 to 60, or "auto" (emulate.dilation)')
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "soak.json"))
    args = ap.parse_args()
    try:
        dilation: float | str = args.dilation if args.dilation == "auto" else float(args.dilation)
    except ValueError:
        print(f"benchmarks/soak.py: --dilation {args.dilation!r} is neither a number nor \"auto\"", file=sys.stderr)
        return 2
    try:
        soak_config(Path(tempfile.gettempdir()), args.clients, args.rounds, dilation)  # bad sizes: one line, exit 2
    except ConfigError as exc:
        print(f"benchmarks/soak.py: {exc}", file=sys.stderr)
        return 2
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    load0 = os.getloadavg()
    out = Path(args.out)
    command = " ".join(["benchmarks/soak.py", *sys.argv[1:]])
    with tempfile.TemporaryDirectory(prefix="fedbw-soak-") as tmp:
        run = soak(args.clients, args.rounds, dilation, Path(tmp),
                   on_round=lambda so_far: write_result(out, so_far, started, load0, command))
    doc = write_result(out, run, started, load0, command)
    print(_table(doc))
    print(f"# {args.clients} clients x {args.rounds} rounds, SecAgg+, dilation {dilation}: {doc['wall_s']} s; "
          f"verdicts {doc['verdicts']}; wrote {out}")
    if run["status"] != "complete":
        print(f"# {run['status']}, {run['stopped']}: the rounds above are kept in {out}")
        return 130 if run["status"] == "interrupted" else 1
    return 0 if doc["verdicts"]["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
