"""Helpers for tests that start real ranks: find every process a test started, wherever it ended up."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import psutil
import pytest

MARK = "FEDBW_TEST_RANKS_MARK"


def marked(mark: str) -> list[psutil.Process]:
    """Live processes whose environment carries ``mark`` (ranks inherit the test's environment)."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(MARK) == mark and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.fixture
def rank_mark(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A mark every rank started in this test inherits; :func:`marked` finds leftovers by it. Rank logs
    (kept when a rank fails) go to the test's temporary directory, in this process and in any it starts."""
    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK, mark)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return mark
