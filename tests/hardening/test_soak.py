"""A small soak in CI (benchmarks/soak.py's function: SecAgg+, 3 clients × 4 rounds) and what its run
directory must not hold: leaked processes, fds or threads; keys, tokens or the environment's secrets.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.hardening.reliability import ENV
from tests.hardening.runs import QUIET_ENV

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

CLIENTS, ROUNDS = 3, 4
#: A secret the run's environment holds (as a real deployment's would): it must not reach any file.
SECRET_ENV = "FEDBW_TEST_API_TOKEN"


def _soak_module() -> Any:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"
    spec = importlib.util.spec_from_file_location("fedbw_bench_soak", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def soak_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    import datetime as dt

    secret = f"tok_{uuid.uuid4().hex}"
    saved = {k: os.environ.get(k) for k in (SECRET_ENV, *QUIET_ENV)}
    os.environ.update({**QUIET_ENV, SECRET_ENV: secret})
    module = _soak_module()
    started, load0 = dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), os.getloadavg()
    try:
        doc = module.soak(CLIENTS, ROUNDS, 1.0, tmp_path_factory.mktemp("soak"))
        out = os.environ.get(ENV)
        target = Path(out).parent / "soak.json" if out else None
        # recording the hardening results: this soak is docs/reliability.md's soak table too, unless the
        # table holds a soak of benchmarks/soak.py (larger than CI's: kept)
        if target is not None and (not target.exists()
                                   or json.loads(target.read_text()).get("command", "").startswith("tests/")):
            module.write_result(target, doc, started, load0,
                                f"tests/hardening/test_soak.py ({CLIENTS} clients x {ROUNDS} rounds, dilation 1)")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return doc, secret


def test_small_soak_leaks_nothing(soak_run, reliability) -> None:
    doc, _ = soak_run
    v = doc["verdicts"]
    assert doc["rounds_recorded"] == ROUNDS and len(doc["per_round"]) == ROUNDS and doc["status"] == "complete"
    assert v["processes_left"] == 0, doc["after"]
    assert v["own_fds_growth_round2_to_last"] <= 0 and v["own_threads_growth_round2_to_last"] <= 0, v
    first = doc["per_round"][0]
    assert doc["after"]["own_fds"] <= first["own_fds"] and doc["after"]["own_threads"] <= first["own_threads"], doc
    assert v["rss_growth_round2_to_last"] is not None and v["rss_growth_round2_to_last"] <= v["rss_growth_bound"], v
    assert v["ok"]
    reliability.area = "load"
    reliability.tried = f"soak: {CLIENTS} emulated clients × {ROUNDS} rounds with SecAgg+ (fedbw's apps, emulate)"
    reliability.kept = ("no process left; fedbw's own fds and threads flat from round to round and no more after "
                        "the run than during it; memory of the long-lived processes grew ≤ "
                        f"{v['rss_growth_bound']:.0%} from round 2 to the last")
    reliability.measure(wall_s=doc["wall_s"], rss_growth_pct=round(100 * v["rss_growth_round2_to_last"], 1),
                        fds_growth=v["fds_growth_round2_to_last"], threads_growth=v["threads_growth_round2_to_last"],
                        own_fds_after_minus_start=v["own_fds_after_minus_start"],
                        own_threads_after_minus_start=v["own_threads_after_minus_start"])


def test_a_soak_stopped_midway_keeps_its_rounds(tmp_path: Path, reliability) -> None:
    """benchmarks/soak.py writes its JSON after every round: SIGTERM after round 1 (a job's time limit)
    leaves the rounds it got, says it was interrupted, and leaves no process."""
    reliability.area = "faults"
    reliability.tried = "SIGTERM to `benchmarks/soak.py` (3 clients, SecAgg+) once its first round is written"
    reliability.kept = "exit 130 without a traceback; soak.json with every finished round, marked interrupted; no process left"
    out = tmp_path / "soak.json"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, str(root / "benchmarks" / "soak.py"), "--clients", "3", "--rounds", "6",
                             "--dilation", "1", "--out", str(out)], cwd=root, env={**os.environ, **QUIET_ENV},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 900
        while proc.poll() is None and time.monotonic() < deadline and not (
                out.exists() and json.loads(out.read_text()).get("per_round")):
            time.sleep(1.0)
        assert proc.poll() is None, f"the soak ended before it was stopped:\n{proc.communicate()[0][-3000:]}"
        assert out.exists(), "no round of the soak finished within 900 s"
        t_stop = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        said = proc.communicate(timeout=300)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    doc = json.loads(out.read_text())
    assert proc.returncode == 130 and "Traceback" not in said, said[-3000:]
    assert doc["status"] == "interrupted" and 1 <= len(doc["per_round"]) < 6, doc["stopped"]
    assert doc["rounds_recorded"] == len(doc["per_round"]) and doc["after"]["processes"] == 0, doc["after"]
    reliability.measure(rounds_kept=len(doc["per_round"]), exit_after_signal_s=round(time.monotonic() - t_stop, 1))


#: What a key, token or credential looks like in a text file (PEM blocks, common token shapes).
SECRET_PATTERNS = [re.compile(p) for p in (
    rb"-----BEGIN [A-Z ]*PRIVATE KEY-----", rb"\bAKIA[0-9A-Z]{16}\b", rb"\bgh[pousr]_[A-Za-z0-9]{30,}",
    rb"(?i)\b(api[_-]?key|secret|password|passwd|token)\s*[=:]\s*['\"]?[A-Za-z0-9_\-]{12,}")]


def secrets_in(root: Path, literal: bytes) -> list[str]:
    """Files under ``root`` holding ``literal`` or anything shaped like a key or token."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if literal in data or any(p.search(data) for p in SECRET_PATTERNS):
            found.append(str(path.relative_to(root)))
    return found


def test_run_directory_and_logs_hold_no_secrets(soak_run, tmp_path: Path, reliability) -> None:
    doc, secret = soak_run
    run_dir = Path(doc["run_dir"])
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert (run_dir / "emulate-logs").is_dir() and len(files) > 5  # logs were kept: there is something to search
    assert secrets_in(run_dir, secret.encode()) == []
    # the search itself finds what it looks for
    (tmp_path / "planted.log").write_bytes(b"ok\nexport FEDBW_TEST_API_TOKEN=" + secret.encode() + b"\n")
    (tmp_path / "key.pem").write_bytes(b"-----BEGIN EC PRIVATE KEY-----\nMHc...\n")
    assert secrets_in(tmp_path, secret.encode()) == ["key.pem", "planted.log"]
    reliability.area = "security"
    reliability.tried = (f"the soak's run directory and logs ({len(files)} files) searched for a token set in the "
                         "run's environment, private keys and token-shaped strings")
    reliability.kept = "none found (the same search finds a planted token and key)"
    reliability.measure(files_searched=len(files))
