"""Atomic writes of whole files: a reader sees the old file or the new one, never a torn one."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from fedbw.errors import RunError
from fedbw.files import atomic
from fedbw.files.atomic import disk_error, write_json_atomic, write_text_atomic


def test_replaces_the_file_keeps_its_mode_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    write_json_atomic(target, {"rounds": 3})
    assert json.loads(target.read_text()) == {"rounds": 3}
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_failed_write_keeps_the_old_file_and_names_the_reason(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "summary.json"
    target.write_text('{"old": true}\n')

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", full)
    with pytest.raises(RunError, match=r"cannot write .*summary.json: No space left on device; the disk is full"):
        write_text_atomic(target, "new text that never lands")
    assert target.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # the temporary file is gone


def test_disk_errors_become_one_line_and_others_stay_errors() -> None:
    ro = disk_error(OSError(errno.EROFS, "Read-only file system", "/mnt/x"))
    assert ro is not None and ro.exit_code == 1 and str(ro).startswith("cannot write /mnt/x: Read-only")
    assert disk_error(OSError(errno.EBADF, "Bad file descriptor")) is None
