"""Faults with nothing lost: processes killed mid-run, Ctrl-C, a full or read-only output directory.

Each run is the smallest that still has rounds to lose (2 clients, synthetic compute, a few rounds).
What every case keeps: the finished rounds' records (read back with the validating loader), a summary
that is whole or absent (never torn), one line naming what went wrong, and no process left behind
(every process the command started carries a marker in its environment; /proc is searched for it).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from fedbw.results.records import load_records
from tests.hardening.runs import (assert_no_process_left, find_process, finished_rounds, run_dirs, small_config,
                                  start_fedbw, stop, valid_json_or_absent, wait_for, write_config)

#: Generous: the first round includes Flower's start-up, minutes on a busy 2-core host.
EMULATE_ROUND_TIMEOUT_S = 600.0
#: Per emulate/simulate test: Flower's start-up and a round or two; minutes on a busy 2-core host.
SLOW_RUN_TIMEOUT_S = 1200


def _only_run_dir(out: Path) -> Path:
    (run_dir,) = run_dirs(out)
    return run_dir


def _kept(run_dir: Path, at_least: int) -> int:
    clients, rounds = load_records(run_dir)
    assert len(rounds) >= at_least, f"{len(rounds)} round records kept, expected ≥ {at_least}"
    assert [r.round for r in rounds] == list(range(1, len(rounds) + 1))
    assert valid_json_or_absent(run_dir / "summary.json")
    return len(rounds)


def _kill_mid_emulate(tmp_path: Path, needle: bytes, name: str, reliability, *, mid_stage: bool = False,
                      secagg: bool = False) -> None:
    """SIGKILL one of emulate's processes after round 1; ``mid_stage``: while a ClientApp runs (a stage is
    under way: its message received, its reply not sent yet)."""
    when = "mid-stage" if mid_stage else "mid-run"
    clients = 3 if secagg else 2  # SecAgg+ shares each key with 3 clients at least
    with_secagg = ", SecAgg+" if secagg else ""
    reliability.area = "faults"
    reliability.tried = (f"the {name} SIGKILLed {when} (`fedbw run --engine emulate`, {clients} clients, 4 rounds"
                         f"{with_secagg})")
    reliability.kept = (f"exit 1 with one message naming the {name}; every finished round's records; "
                        "summary whole; no process left")
    out = tmp_path / "runs"
    sections: dict[str, Any] = {"clients": {"total": clients, "per_round": clients}}
    if secagg:
        sections["privacy"] = {"secagg": {"enabled": True, "num_shares": 3, "reconstruction_threshold": 2}}
    cfg = write_config(tmp_path / "x.toml", small_config(out, "emulate", rounds=4, **sections))
    marker = uuid.uuid4().hex
    proc = start_fedbw("run", str(cfg), marker=marker)
    try:
        wait_for("the first round's records", lambda: finished_rounds(out) >= 1, proc, EMULATE_ROUND_TIMEOUT_S,
                 marker)
        if mid_stage:
            wait_for("a ClientApp at work", lambda: find_process(b"flwr-clientapp", marker) is not None, proc,
                     EMULATE_ROUND_TIMEOUT_S, marker)
        pid = find_process(needle, marker)
        assert pid is not None, f"no {name} process found"
        t_kill = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        text, _ = proc.communicate(timeout=180)
        t_end = time.monotonic() - t_kill
        assert proc.returncode == 1, text
        assert "Traceback" not in text
        assert name in text and "exited unexpectedly" in text, text
        assert "finished rounds are kept" in text
        kept = _kept(_only_run_dir(out), 1)
        left_s = assert_no_process_left(marker)  # before the clean-up below, which would hide a leak
    finally:
        stop(proc, marker)
    reliability.measure(rounds_kept=kept, exit_after_kill_s=round(t_end, 1), cleanup_s=left_s)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_RUN_TIMEOUT_S)
def test_superlink_killed_mid_run(tmp_path: Path, reliability) -> None:
    _kill_mid_emulate(tmp_path, b"flower-superlink", "superlink", reliability)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_RUN_TIMEOUT_S)
@pytest.mark.parametrize("secagg", [False, True], ids=["plain", "secagg"])
def test_supernode_killed_mid_stage(tmp_path: Path, secagg: bool, reliability) -> None:
    _kill_mid_emulate(tmp_path, b"flower-supernode", "SuperNode", reliability, mid_stage=True, secagg=secagg)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_RUN_TIMEOUT_S)
def test_shaper_process_killed_mid_run(tmp_path: Path, reliability) -> None:
    _kill_mid_emulate(tmp_path, b"fedbw.shaper.service", "shaper", reliability)


def _ctrl_c_after_first_round(tmp_path: Path, engine: str, reliability, *, rounds: int,
                              timeout_s: float = EMULATE_ROUND_TIMEOUT_S) -> None:
    reliability.area = "faults"
    reliability.tried = f"Ctrl-C (SIGINT to the process group) after round 1 of `fedbw run --engine {engine}`"
    reliability.kept = "exit 130; finished rounds' records; summary.json whole, saying why it stopped; no process left"
    out = tmp_path / "runs"
    cfg = write_config(tmp_path / "x.toml", small_config(out, engine, rounds=rounds))
    marker = uuid.uuid4().hex
    proc = start_fedbw("run", str(cfg), marker=marker)
    try:
        wait_for("the first round's records", lambda: finished_rounds(out) >= 1, proc, timeout_s, marker)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
        text, _ = proc.communicate(timeout=180)
        assert proc.returncode == 130, text
        assert "Traceback" not in text and "interrupted" in text, text
        run_dir = _only_run_dir(out)
        kept = _kept(run_dir, 1)
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        assert summary.get("stopped_early"), summary
        left_s = assert_no_process_left(marker)  # before the clean-up below, which would hide a leak
    finally:
        stop(proc, marker)
    reliability.measure(rounds_kept=kept, rounds_planned=rounds, cleanup_s=left_s)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_RUN_TIMEOUT_S)
def test_ctrl_c_during_emulate(tmp_path: Path, reliability) -> None:
    _ctrl_c_after_first_round(tmp_path, "emulate", reliability, rounds=4)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_RUN_TIMEOUT_S)
def test_ctrl_c_during_simulate(tmp_path: Path, reliability) -> None:
    _ctrl_c_after_first_round(tmp_path, "simulate", reliability, rounds=40, timeout_s=300.0)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_RUN_TIMEOUT_S)
@pytest.mark.parametrize(("engine", "needle", "what"), [
    ("emulate", b"flower-supernode", "its SuperNodes starting"),
    ("simulate", b"raylet", "Ray starting"),
], ids=["emulate", "simulate"])
def test_ctrl_c_during_start_up(tmp_path: Path, engine: str, needle: bytes, what: str, reliability) -> None:
    """Ctrl-C before any round: the phase in which the most processes are coming up at once."""
    reliability.area = "faults"
    reliability.tried = (f"Ctrl-C (SIGINT to the process group) during the start-up of `fedbw run --engine "
                         f"{engine}` ({what}, no round finished)")
    reliability.kept = "exit 130 saying it was interrupted; no traceback; summary whole or absent; no process left"
    out = tmp_path / "runs"
    cfg = write_config(tmp_path / "x.toml", small_config(out, engine, rounds=4))
    marker = uuid.uuid4().hex
    proc = start_fedbw("run", str(cfg), marker=marker)
    try:
        wait_for(what, lambda: find_process(needle, marker) is not None, proc, EMULATE_ROUND_TIMEOUT_S, marker)
        rounds_before = finished_rounds(out)
        t_int = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        text, _ = proc.communicate(timeout=180)
        t_end = time.monotonic() - t_int
        assert rounds_before == 0, "a round finished before the interrupt: not the start-up any more"
        assert proc.returncode == 130, text
        assert "Traceback" not in text and "interrupted" in text, text
        for run_dir in run_dirs(out):
            assert valid_json_or_absent(run_dir / "summary.json")
        left_s = assert_no_process_left(marker)  # before the clean-up below, which would hide a leak
    finally:
        stop(proc, marker)
    reliability.measure(exit_after_interrupt_s=round(t_end, 1), cleanup_s=left_s)


# ----------------------------------------------------------------------------- full or read-only disks
def _mount_tmpfs(path: Path, options: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({res.stderr.strip() or 'not root'})")


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 256 KiB file system of its own: filled to the brim, or mounted read-only."""
    mounts: list[Path] = []

    def make(options: str) -> Path:
        path = tmp_path / f"disk{len(mounts)}"
        _mount_tmpfs(path, options)
        mounts.append(path)
        return path

    yield make
    for path in mounts:
        subprocess.run(["umount", str(path)], capture_output=True)


def _fill(disk: Path, leave_bytes: int) -> None:
    """Fill ``disk`` until at most ``leave_bytes`` are free."""
    filler = disk / "filler"
    with filler.open("wb") as fh:
        try:
            while True:
                st = os.statvfs(disk)
                free = st.f_bavail * st.f_frsize
                if free <= leave_bytes:
                    break
                fh.write(b"\0" * min(4096, free - leave_bytes if free - leave_bytes >= 4096 else 4096))
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


@pytest.mark.parametrize("free_bytes", [0, 16 * 1024])
def test_full_output_directory(small_disk, free_bytes: int, reliability) -> None:
    reliability.area = "faults"
    reliability.tried = f"a full output directory ({free_bytes // 1024} KiB free on a 256 KiB file system)"
    reliability.kept = "exit 1 with one line naming the file and 'disk is full'; summary whole or absent"
    disk = small_disk("size=256k")
    _fill(disk, free_bytes)
    proc = start_fedbw("run", "experiments/quickstart.toml", "--engine", "estimate",
                       "--set", f"output_dir={disk}/runs", marker=uuid.uuid4().hex)
    text, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, text
    flat = " ".join(text.split())  # the terminal may wrap the one line
    assert "Traceback" not in text and "No space left on device" in flat and "free some space" in flat, text
    assert len([line for line in text.splitlines() if line.startswith("error:")]) == 1, text
    for run_dir in run_dirs(disk / "runs"):
        assert valid_json_or_absent(run_dir / "summary.json")
        records = run_dir / "records.jsonl"
        if records.is_file() and records.stat().st_size:
            # every whole line is a record; a torn last line (the disk filled inside it) is named on load
            lines = records.read_bytes().split(b"\n")
            for line in lines[:-1]:
                json.loads(line)


def test_read_only_output_directory(small_disk, reliability) -> None:
    reliability.area = "faults"
    reliability.tried = "an output directory on a read-only file system"
    reliability.kept = "exit 1 with one line naming the directory and 'read-only'; nothing half-written"
    disk = small_disk("size=64k,ro")
    proc = start_fedbw("run", "experiments/quickstart.toml", "--engine", "estimate",
                       "--set", f"output_dir={disk}/runs", marker=uuid.uuid4().hex)
    text, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, text
    assert "Traceback" not in text and "read-only" in text and str(disk) in text, text


def _sweep_index(out: Path) -> dict | None:
    for path in out.glob("*-sweep-*/sweep.json"):
        try:
            return json.loads(path.read_text(encoding="utf-8")) | {"_dir": str(path.parent)}
        except ValueError:  # the index is written atomically: a torn one is a failure
            raise AssertionError(f"{path} is not whole JSON") from None
    return None


@pytest.mark.slow
@pytest.mark.timeout(SLOW_RUN_TIMEOUT_S)
def test_ctrl_c_during_sweep(tmp_path: Path, reliability) -> None:
    reliability.area = "faults"
    reliability.tried = "Ctrl-C during `fedbw sweep --engine simulate` (point 1 done, point 2 running)"
    reliability.kept = ("exit 130 with the --resume command; sweep.json whole: done / interrupted; both points' "
                        "finished rounds; no process left")
    out = tmp_path / "runs"
    cfg = write_config(tmp_path / "x.toml", small_config(out, "simulate", rounds=2))
    marker = uuid.uuid4().hex
    proc = start_fedbw("sweep", str(cfg), "--grid", "training.rounds=2,40", marker=marker)
    try:
        def first_point_done() -> bool:
            index = _sweep_index(out)
            # point 1's 2 rounds and a finished round of point 2 (round lines across the points' run dirs)
            return bool(index) and index["points"][0]["status"] == "done" and finished_rounds(
                Path(index["_dir"])) >= 2 + 1
        wait_for("the first point and a round of the second", first_point_done, proc, 600.0, marker)
        os.killpg(proc.pid, signal.SIGINT)
        text, _ = proc.communicate(timeout=180)
        assert proc.returncode == 130, text
        assert "Traceback" not in text and "interrupted" in text and "--resume" in text, text
        index = _sweep_index(out)
        assert index is not None
        assert [p["status"] for p in index["points"]] == ["done", "interrupted"], index["points"]
        kept = [_kept(Path(index["_dir"]) / p["run_dir"], 1) for p in index["points"]]
        left_s = assert_no_process_left(marker)
    finally:
        stop(proc, marker)
    reliability.measure(rounds_kept_per_point=kept, cleanup_s=left_s)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_RUN_TIMEOUT_S)
def test_ctrl_c_during_calibrate(tmp_path: Path, reliability) -> None:
    reliability.area = "faults"
    reliability.tried = ("Ctrl-C (SIGINT to the process group) during `fedbw calibrate`, while its Flower "
                         "processes run, over an earlier calibration file")
    reliability.kept = ("exit 130 saying no calibration was written; the earlier file byte for byte; "
                        "no process left")
    target = tmp_path / "cal.toml"
    earlier = "# an earlier calibration: must survive an interrupted one\n"
    target.write_text(earlier, encoding="utf-8")
    marker = uuid.uuid4().hex
    proc = start_fedbw("calibrate", "--out", str(target), "--rounds", "2", marker=marker)
    try:
        wait_for("calibrate's SuperLink", lambda: find_process(b"flower-superlink", marker) is not None, proc,
                 300.0, marker)
        t_int = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        text, _ = proc.communicate(timeout=180)
        t_end = time.monotonic() - t_int
        assert proc.returncode == 130, text
        assert "Traceback" not in text and "no calibration written" in text, text
        assert "rounds are kept" not in text, text  # calibrate keeps no rounds: it must not say so
        assert target.read_text(encoding="utf-8") == earlier
        left_s = assert_no_process_left(marker)
    finally:
        stop(proc, marker)
    reliability.measure(exit_after_interrupt_s=round(t_end, 1), cleanup_s=left_s)
