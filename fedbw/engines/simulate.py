"""The simulate engine: real Flower rounds in the Simulation Engine, timed by a virtual network clock.

The Flower apps run in a child process (:mod:`fedbw.engines.sim_child`) and log what they measure;
this process tails that log, lays each finished round on the network model (per client: download,
compute, upload per stage; the round is the barrier over sampled clients) and appends the round's
records at once, so an interrupted run keeps every finished round. Whatever happens — success,
failure, Ctrl-C — the child's whole process group (Flower, Ray) is stopped before this returns.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

from fedbw.engines.base import NoProgress, Progress, RunResult
from fedbw.engines.sim_events import EventReader, RoundAssembler, records_from_round_events
from fedbw.errors import RunError
from fedbw.plan import Plan
from fedbw.results.records import RecordWriter
from fedbw.results.rundir import write_run_metadata

ENGINE = "simulate"
LOG_FILE = "simulation.log"
POLL_S = 0.2
STOP_GRACE_S = 15.0


def describe_device(device: str) -> str:
    if device == "cuda":
        import torch

        return f"cuda ({torch.cuda.get_device_name(0)})"
    return "cpu"


def flower_env(tmp: Path) -> dict[str, str]:
    """Environment for everything that starts Flower: private FLWR_HOME and Ray temp, no telemetry."""
    env = dict(os.environ)
    (tmp / "flwr").mkdir(exist_ok=True)
    (tmp / "ray").mkdir(exist_ok=True)
    env.update(FLWR_HOME=str(tmp / "flwr"), FLWR_TELEMETRY_ENABLED="0", FLWR_DISABLE_UPDATE_CHECK="1",
               RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=str(tmp / "ray"), RAY_DEDUP_LOGS="0",
               PYTHONUNBUFFERED="1", RAY_ENABLE_UV_RUN_RUNTIME_ENV="0")
    return env


class SimulationProcess:
    """The child running Flower, in its own session; :meth:`stop` ends its whole process group."""

    def __init__(self, command: list[str], log_path: Path) -> None:
        self.command, self.log_path = command, log_path
        self.proc: subprocess.Popen | None = None
        self.tmp: Path | None = None

    def __enter__(self) -> "SimulationProcess":
        # Short path: Ray's socket names must fit in 107 bytes.
        self.tmp = Path(tempfile.mkdtemp(prefix="fedbw-"))
        log = self.log_path.open("ab")
        try:
            self.proc = subprocess.Popen(self.command, env=flower_env(self.tmp), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()
        return self

    def poll(self) -> int | None:
        return self.proc.poll() if self.proc else 0

    def stop(self) -> None:
        """SIGINT to the child (it shuts Ray down), then SIGTERM and SIGKILL to its whole group."""
        if self.proc is None:
            return
        pgid = self.proc.pid  # session leader: its pid is the group id
        if self.proc.poll() is None:
            _signal(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(pgid, signal.SIGTERM)
                try:
                    self.proc.wait(5.0)
                except subprocess.TimeoutExpired:
                    _signal_group(pgid, signal.SIGKILL)
                    self.proc.wait()
        # Anything Ray left in the group (it should have shut down) goes too; wait until it is gone.
        _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 10.0
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            if self.tmp is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _log_tail(path: Path, lines: int = 25) -> str:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            return "".join(deque(fh, maxlen=lines))
    except OSError:
        return ""


def child_command(plan_path: Path) -> list[str]:
    return [sys.executable, "-m", "fedbw.engines.sim_child", str(plan_path)]


def run_simulate(plan: Plan, run_id: str, writer: RecordWriter | None = None,
                 progress: Progress = NoProgress, *, measure: bool = True) -> RunResult:
    """Run ``plan`` in Flower's Simulation Engine; records go to ``writer`` as each round ends.

    ``measure=False`` runs the same apps without message sizing or the client mod (the baseline of
    benchmarks/simulate.py); its records carry zero bytes.
    """
    from fedbw.fl.settings import EVENTS_FILE, write_plan_file
    from fedbw.fl.train import resolve_device

    if writer is None:
        raise RunError("the simulate engine writes records into a run directory; pass a RecordWriter")
    run_dir = writer.path.parent
    device = resolve_device(plan.config.device)
    write_run_metadata(run_dir, plan.config, device=describe_device(device))
    plan_path = write_plan_file(run_dir, plan.config, device, measure=measure)
    events_path = run_dir / EVENTS_FILE
    events_path.unlink(missing_ok=True)
    result = RunResult(run_dir=run_dir)
    reader, assembler = EventReader(events_path), RoundAssembler()
    per_round = plan.config.clients.per_round

    def consume() -> None:
        for ev in reader.read_new():
            rnd = assembler.add(ev)
            if ev.get("event") == "message":
                r = ev["round"]
                progress(r, min(assembler.get(r).clients_done(), per_round - 1), per_round)
            if rnd is not None:
                clients, record = records_from_round_events(plan, run_id, ENGINE, rnd)
                writer.write([*clients, record])
                result.clients += clients
                result.rounds.append(record)
                progress(rnd.round, per_round, per_round)

    with SimulationProcess(child_command(plan_path), run_dir / LOG_FILE) as child:
        progress(1, 0, per_round)
        while child.poll() is None:
            consume()
            time.sleep(POLL_S)
        consume()
        code = child.poll()
    result.stopped_early = assembler.stopped_early  # privacy.dp.max_epsilon ended the run before training.rounds
    if code != 0 or assembler.error or (len(result.rounds) < plan.rounds and not result.stopped_early):
        why = assembler.error or f"the simulation process exited with code {code}"
        raise RunError(f"simulate stopped after {len(result.rounds)} of {plan.rounds} round(s): {why}\n"
                       f"--- {run_dir / LOG_FILE} (last lines) ---\n{_log_tail(run_dir / LOG_FILE)}"
                       "finished rounds are kept in records.jsonl")
    return result
