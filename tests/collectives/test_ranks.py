"""Real gloo ranks on loopback: the sweep, the check, and every rank stopped on error, timeout and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fedbw.collectives.allreduce import measure_allreduce
from fedbw.collectives.launch import run_ranks
from fedbw.errors import RunError

from .conftest import marked

pytestmark = pytest.mark.slow


def test_gloo_sweep_measures_checks_and_fits(rank_mark: str) -> None:
    m = measure_allreduce("gloo", [2], [1024, 65536], "bfloat16", iters=2, warmup=1, fabric="eth-1g")
    (table,) = m.tables
    assert [r.size_bytes for r in table.rows] == [1024, 65536] and [r.count for r in table.rows] == [512, 32768]
    for r in table.rows:
        assert r.ip_time_s > 0 and r.oop_time_s > 0 and r.oop_wrong == 0 and r.ip_wrong == 0
        assert r.model_time_s > 0 and r.fit_time_s > 0 and r.cores_busy >= 0
    assert table.fit.points == 2 and table.verdict.bound == "cpu"
    json.dumps(m.to_json())
    assert m.environment["usable_cores"] >= 1 and m.joint_fit is None
    assert not marked(rank_mark)


def test_a_failing_rank_is_a_run_error_with_its_log(rank_mark: str) -> None:
    spec = {"backend": "gloo", "dtype": "int8", "sizes": [1024], "iters": 1, "warmup": 0, "timeout_s": 30}
    with pytest.raises(RunError, match=r"rank \d.*exited with code 1(.|\n)*KeyError"):
        run_ranks("allreduce", spec, 2, timeout_s=120)
    assert not marked(rank_mark)


def test_ranks_past_the_deadline_are_stopped(rank_mark: str) -> None:
    spec = {"backend": "gloo", "dtype": "float32", "sizes": [1 << 20], "iters": 10**7, "warmup": 0, "timeout_s": 60}
    with pytest.raises(RunError, match="did not finish in time"):  # 10^7 iterations: hours, were they let run
        run_ranks("allreduce", spec, 2, timeout_s=12)
    assert not marked(rank_mark)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_stop_every_rank(rank_mark: str, sig: int, tmp_path) -> None:
    cmd = [sys.executable, "-m", "fedbw.cli", "allreduce", "--backend", "gloo", "--ranks", "2", "--sizes", "1M",
           "--iters", "10000000", "--out", str(tmp_path / "x.json")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err, left = "", []
    try:
        deadline = time.monotonic() + 90
        while len(_ranks(rank_mark)) < 2:  # both rank processes, not just any two marked ones
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        time.sleep(3)  # let them reach the timed loop
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        left = [_describe(p) for p in marked(rank_mark) if p.pid != os.getpid()]
    finally:
        if proc.poll() is None:
            proc.kill()
        # A failure here must not leave busy ranks behind for the rest of the suite (they would take the
        # host's cores from every later test): whatever carries this test's mark is ended, by PID.
        for p in marked(rank_mark):
            if p.pid != os.getpid():
                p.kill()
    assert proc.returncode == 130, f"exit {proc.returncode}; left {left}; stderr: {err}"
    assert "Traceback" not in err and "interrupted" in err, err
    assert not left, f"left running: {left}; stderr: {err}"


def _ranks(mark: str) -> list:
    out = []
    for p in marked(mark):
        try:
            if "fedbw.collectives.worker" in p.cmdline():
                out.append(p)
        except Exception:  # noqa: BLE001 - gone meanwhile
            continue
    return out


def _describe(p) -> str:
    """pid, parent, status and command line of a leftover, for the failure message."""
    try:
        return f"{p.pid} (ppid {p.ppid()}, {p.status()}): {' '.join(p.cmdline())[:160]}"
    except Exception:  # noqa: BLE001 - it may be gone by now
        return str(p.pid)
