"""Packed SecAgg+ in Flower's real Simulation Engine (Ray), once: the loopback tests cover the rest."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from fedbw.netmodel.payload import round_exchanges

from .toyapp import SHAPES

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_packed_secagg_under_ray_simulation(tmp_path):
    ray_tmp = tempfile.mkdtemp(prefix="fbp", dir="/tmp")  # Ray's socket paths must stay < 108 bytes
    try:
        _run_and_check(tmp_path, ray_tmp)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def _run_and_check(tmp_path, ray_tmp):
    env = dict(os.environ, FLWR_TELEMETRY_ENABLED="0", FLWR_DISABLE_UPDATE_CHECK="1",
               FLWR_HOME=str(tmp_path / "flwr"), RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=ray_tmp,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, "-m", "tests.fl.privacy.ray_packed", "packed"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:  # stop the child and everything Ray started under it
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, err[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["dtypes"] == ["float32"]
    assert result["max_err"] < 1e-4  # within quantization error of the exact weighted average
    params = sum(math.prod(s) for s in SHAPES)
    for rnd in (1, 2):
        up = result["bytes"][f"{rnd}/collect_masked_vectors"][1]
        assert 4 * params < up < 1.01 * 4 * params  # ≈ 4 B/param on the wire
        down = result["bytes"][f"{rnd}/collect_masked_vectors"][0]
        assert down < 1.02 * 4 * params  # the global model stays float32: no doubling in round 2
        # the loopback-calibrated model predicts Ray's measured bytes (no measure record here)
        pred = {e.stage: e for e in round_exchanges(params, len(SHAPES), rnd, secagg="packed", num_neighbours=2)}
        assert up == pytest.approx(pred["collect_masked_vectors"].bytes_up, rel=0.002)
