"""The simulate engine: real Flower rounds in the Simulation Engine, timed by a virtual network clock.

The Flower apps run in a child process (:mod:`.child` for fedbw's apps, :mod:`.app_child` for any
Flower app: :mod:`.foreign`) and log what they measure; this process tails that log, lays each finished
round on the network model (:mod:`.clock`: per client download, compute and upload per stage, Flower's
deployment costs, the barrier over sampled clients) and appends the round's records at once, so an
interrupted run keeps every finished round. Whatever happens — success, failure, Ctrl-C — the
supervisor stops the child's whole process tree (Flower, Ray) before this returns.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fedbw.engines.base import NoProgress, Progress, RunResult
from fedbw.engines.measured import EventReader, RoundAssembler
from fedbw.engines.simulate.clock import records_from_round_events
from fedbw.errors import RunError
from fedbw.plan import Plan
from fedbw.processes import Supervisor
from fedbw.results.measured_round import mark_halted
from fedbw.results.records import RecordWriter

ENGINE = "simulate"
LOG_FILE = "simulation.log"
POLL_S = 0.2
#: SIGINT first (the child shuts Ray down), then this long before SIGKILL.
STOP_GRACE_S = 15.0


def flower_env(tmp: Path, ray_cluster: bool = False) -> dict[str, str]:
    """Environment for everything that starts Flower: private FLWR_HOME and Ray temp, no telemetry.

    ``RAY_ADDRESS`` is dropped, so a private Ray never joins a cluster by accident; attaching to one is
    explicit (``ray_cluster``: the config's ``simulate.ray_address``), and then ``RAY_ADDRESS`` and
    ``RAY_TMPDIR`` stay as the person set them, which is how Ray's ``"auto"`` finds its cluster."""
    env = dict(os.environ)
    (tmp / "flwr").mkdir(exist_ok=True)
    (tmp / "ray").mkdir(exist_ok=True)
    env.update(FLWR_HOME=str(tmp / "flwr"), FLWR_TELEMETRY_ENABLED="0", FLWR_DISABLE_UPDATE_CHECK="1",
               RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=str(tmp / "ray"), RAY_DEDUP_LOGS="0",
               PYTHONUNBUFFERED="1", RAY_ENABLE_UV_RUN_RUNTIME_ENV="0", RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO="0")
    if ray_cluster:
        for key in ("RAY_ADDRESS", "RAY_TMPDIR"):
            env.pop(key, None)
            if key in os.environ:
                env[key] = os.environ[key]
    else:
        env.pop("RAY_ADDRESS", None)
    return env


def child_command(plan_path: Path) -> list[str]:
    return [sys.executable, "-m", "fedbw.engines.simulate.child", str(plan_path)]


@dataclass
class ChildRun:
    """What :func:`run_child` saw: the child's exit, and the assembled event log."""

    code: int | None
    assembler: RoundAssembler
    tail: list[str]


def run_child(command: list[str], run_dir: Path, events_path: Path, per_round: int, progress: Progress,
              on_round: Callable[..., None], ray_cluster: bool = False) -> ChildRun:
    """Run ``command`` (a simulation child) under the supervisor in a private FLWR_HOME/RAY_TMPDIR,
    tailing ``events_path``; ``on_round(round_events)`` gets every round as its ``round_end`` arrives.
    ``ray_cluster``: the child attaches to an existing Ray cluster (:func:`flower_env`)."""
    reader, assembler = EventReader(events_path), RoundAssembler()

    def consume() -> None:
        for ev in reader.read_new():
            rnd = assembler.add(ev)
            if ev.get("event") == "message":
                r = ev["round"]
                progress(r, min(assembler.get(r).clients_done(), per_round - 1), per_round)
            if rnd is not None:
                on_round(rnd)
                progress(rnd.round, per_round, per_round)

    # Short path: Ray's socket names must fit in 107 bytes.
    tmp = Path(tempfile.mkdtemp(prefix="fedbw-"))
    try:
        with Supervisor() as sup:
            child = sup.start("simulation", command, flower_env(tmp, ray_cluster), run_dir / LOG_FILE,
                              stop_signal=signal.SIGINT, stop_leader_only=True, stop_grace_s=STOP_GRACE_S,
                              stamp=False, keep_lines=False)
            progress(1, 0, per_round)
            while child.alive:
                sup.track()
                consume()
                time.sleep(POLL_S)
            consume()
            return ChildRun(child.returncode, assembler, child.tail())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_simulate(plan: Plan, run_id: str, writer: RecordWriter | None = None,
                 progress: Progress = NoProgress, *, measure: bool = True) -> RunResult:
    """Run ``plan`` in Flower's Simulation Engine; records go to ``writer`` as each round ends.

    ``measure=False`` runs the same apps without message sizing or the client mod (the baseline of
    benchmarks/simulate.py); its records carry zero bytes.
    """
    from fedbw.fl.settings import EVENTS_FILE, write_plan_file

    if writer is None:
        raise RunError("the simulate engine writes records into a run directory; pass a RecordWriter")
    run_dir = writer.path.parent
    plan_path = write_plan_file(run_dir, plan, measure=measure)
    events_path = run_dir / EVENTS_FILE
    events_path.unlink(missing_ok=True)
    result = RunResult(run_dir=run_dir, plan=plan)
    clock = plan.deployment_clock()  # one virtual clock for the whole run: poll grids carry over

    def on_round(rnd) -> None:
        clients, record = records_from_round_events(plan, run_id, ENGINE, rnd, clock=clock)
        mark_halted(record, rnd)
        writer.write([*clients, record])
        result.clients += clients
        result.rounds.append(record)

    run = run_child(child_command(plan_path), run_dir, events_path, plan.config.clients.per_round, progress, on_round,
                    ray_cluster=bool(plan.config.simulate.ray_address))
    result.stopped_early = run.assembler.stopped_early  # privacy.dp.max_epsilon ended the run before training.rounds
    if run.code != 0 or run.assembler.error or (len(result.rounds) < plan.rounds and not result.stopped_early):
        raise RunError(failure_message(len(result.rounds), plan.rounds, run, run_dir))
    return result


def failure_message(done: int, planned: int | None, run: ChildRun, run_dir: Path) -> str:
    why = run.assembler.error or f"the simulation process exited with code {run.code}"
    of = f" of {planned}" if planned else ""
    tail = "\n".join(run.tail)
    return (f"simulate stopped after {done}{of} round(s): {why}\n--- {run_dir / LOG_FILE} (last lines) ---\n"
            f"{tail}\nfinished rounds are kept in records.jsonl")
