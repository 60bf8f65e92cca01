"""fedbw's ClientApp trains with the threads its environment names (emulate's capped devices: one)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fedbw.fl.settings import THREADS_ENV

PROBE = """
import types, torch
from fedbw.fl.client_app import _model
plan = types.SimpleNamespace(model=types.SimpleNamespace(name="mlp"))
settings = types.SimpleNamespace(plan=plan, device="cpu", config=types.SimpleNamespace(seed=0))
_model(settings)
print(torch.get_num_threads())
"""


def _threads(env: dict[str, str]) -> int:
    base = {k: v for k, v in os.environ.items() if k not in (THREADS_ENV, "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**base, **env}, capture_output=True, text=True,
                         timeout=120, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one thread is torch's default anyway")
def test_the_threads_variable_sets_torchs_threads() -> None:
    assert _threads({THREADS_ENV: "1"}) == 1
    assert _threads({}) > 1  # torch's default: a thread per core
