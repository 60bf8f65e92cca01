"""Helpers of the fault tests: a fedbw command in its own process group, watched, interrupted, checked.

Why a process group of its own: Ctrl-C in a terminal sends SIGINT to the foreground process group,
not to one process; sending it to the group is what a person's Ctrl-C does. Every child fedbw starts
(SuperLink, SuperNodes, the shaper, Ray) sits in a session of its own, so the test also checks, by
scanning /proc, that none of them outlives the command.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: The house rules' environment for every process that may start Flower or Ray.
QUIET_ENV = {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1", "RAY_USAGE_STATS_ENABLED": "0"}


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"
    return repr(v)


def write_config(path: Path, data: dict[str, Any]) -> Path:
    """A small TOML writer for the flat configs of these tests (top-level keys, then one table each)."""
    lines = [f"{k} = {toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for section, body in data.items():
        if isinstance(body, dict):
            lines.append(f"\n[{section}]")
            lines += [f"{k} = {toml_value(v)}" for k, v in body.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def small_config(out_dir: Path, engine: str, rounds: int, **sections: dict[str, Any]) -> dict[str, Any]:
    """2 clients, synthetic compute, home-80: the shortest run that still has rounds to lose."""
    base: dict[str, Any] = {
        "name": f"hardening-{engine}", "engine": engine, "seed": 0, "output_dir": str(out_dir),
        "clients": {"total": 2, "per_round": 2, "compute": "synthetic"},
        "training": {"rounds": rounds}, "network": {"profile": "home-80"},
    }
    for key, body in sections.items():
        base[key] = {**base.get(key, {}), **body}
    return base


#: Set in every command these tests start (and so in everything it starts): finds what outlives it.
MARKER_ENV = "FEDBW_HARDENING_RUN"


def start_fedbw(*args: str, marker: str, cwd: Path = ROOT) -> subprocess.Popen[str]:
    """``python -m fedbw.cli ARGS`` as the leader of a new process group (as a shell runs a command)."""
    env = {**os.environ, **QUIET_ENV, "PYTHONPATH": str(ROOT), "COLUMNS": "200", MARKER_ENV: marker}
    return subprocess.Popen([sys.executable, "-m", "fedbw.cli", *args], cwd=cwd, env=env, encoding="utf-8",
                            errors="replace", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def wait_for(what: str, cond: Callable[[], bool], proc: subprocess.Popen[str], timeout_s: float,
             marker: str) -> None:
    """Until ``cond()``; on timeout the command is interrupted (so it stops its children) and whatever
    carries its marker afterwards is killed by PID, so a failed test leaves nothing running."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"fedbw exited ({proc.returncode}) before {what}:\n{out[-3000:]}")
        time.sleep(0.3)
    stop(proc, marker)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def stop(proc: subprocess.Popen[str], marker: str) -> None:
    """Interrupt the command as Ctrl-C would; then SIGKILL, by PID, anything of it still alive."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    for pid in processes_started_by(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_dirs(out_dir: Path) -> list[Path]:
    return sorted(p for p in out_dir.iterdir() if p.is_dir()) if out_dir.is_dir() else []


def finished_rounds(out_dir: Path) -> int:
    """Round lines written so far into the (only) run directory's records.jsonl."""
    n = 0
    for d in run_dirs(out_dir):
        path = d / "records.jsonl"
        if path.is_file():
            n += sum(1 for line in path.read_text(encoding="utf-8").splitlines() if '"kind": "round"' in line
                     or '"kind":"round"' in line)
    return n


def find_process(needle: bytes, marker: str) -> int | None:
    """The first live process started by this test's command whose command line holds ``needle``.

    Only processes carrying the command's marker: other people's emulations on this host are never touched.
    """
    for pid in processes_started_by(marker):
        try:
            if needle in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    return None


def processes_started_by(marker: str) -> list[int]:
    """Live processes whose environment holds ``MARKER_ENV=marker`` (inherited from the command)."""
    needle = f"{MARKER_ENV}={marker}".encode()
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                stat = (entry / "stat").read_text()
                if stat[stat.rfind(")") + 2] != "Z":
                    out.append(int(entry.name))
        except OSError:
            continue
    return out


def assert_no_process_left(marker: str, timeout_s: float = 20.0) -> float:
    """Wait until no process carrying ``marker`` lives; returns how long that took (s)."""
    t0 = time.monotonic()

    def left() -> list[int]:
        return processes_started_by(marker)

    while left() and time.monotonic() - t0 < timeout_s:
        time.sleep(0.5)
    remaining = left()
    assert remaining == [], f"processes left behind: {remaining}"
    return round(time.monotonic() - t0, 1)


def valid_json_or_absent(path: Path) -> bool:
    """A summary is either not there or whole (never a torn document)."""
    if not path.exists():
        return True
    json.loads(path.read_text(encoding="utf-8"))
    return True
