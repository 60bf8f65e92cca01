"""Files a run writes whole (summaries, run metadata, benchmark results): written atomically.

Why: a summary is rewritten at the end of a run, often while the run is being interrupted or the disk
is filling up. Written in place, a Ctrl-C or a full disk leaves half a JSON document that every later
``fedbw report`` trips over. Here the text goes to a temporary file beside the target, is fsynced,
and replaces the target in one ``os.replace`` — a reader sees the old file or the new one, never a
torn one — and the directory entry is fsynced too. A failure (no space, read-only file system, no
permission) removes the temporary file, leaves the old target as it was and raises
:class:`~fedbw.errors.RunError` naming the file and what to do. Append-only files (``records.jsonl``)
are not for this module: they are appended and fsynced line by line (:mod:`fedbw.results.records`).
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from fedbw.errors import RunError

#: What to tell a person for the errors a full, read-only or foreign output directory gives.
_ADVICE = {
    errno.ENOSPC: "the disk is full; free some space or point output_dir at another disk",
    errno.EDQUOT: "the disk quota is used up; free some space or point output_dir at another disk",
    errno.EROFS: "the file system is read-only; point output_dir at a writable directory",
    errno.EACCES: "no permission to write there; point output_dir at a directory you own",
    errno.EPERM: "no permission to write there; point output_dir at a directory you own",
    errno.ENOTDIR: "a part of the path is a file, not a directory; fix output_dir",
}


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


#: Permissions of a new file (what ``open()`` would give it); mkstemp's own 0600 would hide summaries.
_NEW_FILE_MODE = _default_mode()


def describe_write_error(path: str | os.PathLike[str], exc: OSError) -> str:
    """One line saying which file could not be written, why, and what to change."""
    advice = _ADVICE.get(exc.errno or 0)
    reason = exc.strerror or exc.__class__.__name__
    return f"cannot write {os.fspath(path)}: {reason}" + (f"; {advice}" if advice else "")


def write_error(path: str | os.PathLike[str], exc: OSError) -> RunError:
    """The :class:`RunError` for an ``OSError`` met while writing ``path`` (raise it ``from None``)."""
    return RunError(describe_write_error(path, exc))


def disk_error(exc: OSError) -> RunError | None:
    """The one-line :class:`RunError` for an ``OSError`` a full, read-only or foreign output directory
    gives (wherever it was raised: records, plots, metadata); None for any other ``OSError``.

    Why here: the CLI's error handler turns these into one line instead of a traceback, with the
    same wording as the atomic writers' own errors.
    """
    if exc.errno not in _ADVICE:
        return None
    return write_error(exc.filename if exc.filename is not None else "the output directory", exc)


def write_text_atomic(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> Path:
    """Replace ``path`` with ``text`` in one step (see the module docstring); returns the path."""
    target = Path(path)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            mode = target.stat().st_mode & 0o7777
        except OSError:
            mode = _NEW_FILE_MODE
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding=encoding) as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        tmp = None
        _fsync_dir(target.parent)
    except OSError as exc:
        raise write_error(target, exc) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return target


def write_json_atomic(path: str | os.PathLike[str], data: Any, *, indent: int | None = 2,
                      sort_keys: bool = False) -> Path:
    """``data`` as JSON (one trailing newline), replacing ``path`` in one step."""
    return write_text_atomic(path, json.dumps(data, indent=indent, sort_keys=sort_keys) + "\n")


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (a crash right after it keeps the new file)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return  # not every file system lets a directory be opened; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
