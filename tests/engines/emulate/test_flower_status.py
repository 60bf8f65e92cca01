"""Waiting for a Flower run: a SuperLink slow to answer is asked again; a silent one ends with a message."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from fedbw.engines.emulate import flower
from fedbw.engines.emulate.flower import FlowerDeployment, RunStatus
from fedbw.errors import RunError


def _deployment(answers: list) -> SimpleNamespace:
    def status(run_id: int) -> RunStatus:
        answer = answers.pop(0) if answers else answers_default
        if isinstance(answer, Exception):
            raise answer
        return answer

    answers_default = httpx.ReadTimeout("timed out")
    return SimpleNamespace(sup=SimpleNamespace(check=lambda: None), status=status, logs=Path("/logs"))


def test_status_timeouts_on_a_busy_host_are_retried() -> None:
    done = RunStatus(7, "finished", "completed", "")
    dep = _deployment([httpx.ReadTimeout("timed out"), httpx.ConnectError("refused"), done])
    assert FlowerDeployment.wait(dep, 7, timeout_s=30, poll_s=0.01) == done


def test_a_superlink_that_stays_silent_ends_the_run_with_one_message(monkeypatch) -> None:
    monkeypatch.setattr(flower, "STATUS_SILENCE_S", 0.3)
    with pytest.raises(RunError, match=r"SuperLink has not answered a run-status request for \d+ s \(ReadTimeout"):
        FlowerDeployment.wait(_deployment([]), 7, timeout_s=30, poll_s=0.01)
