"""Reading a trace file's lines, and the one-line error every bad file gives (``FILE:LINE: what``)."""

from __future__ import annotations

import os
from pathlib import Path

from fedbw.errors import ConfigError

#: A file's data: (line number counted from 1, the line without its comment, stripped), blank lines left out.
Lines = list[tuple[int, str]]


def trace_error(path: str | os.PathLike[str], what: str, line: int | None = None) -> ConfigError:
    """The :class:`ConfigError` (exit 2) naming the file and, where there is one, the line."""
    where = os.fspath(path) if line is None else f"{os.fspath(path)}:{line}"
    return ConfigError(f"trace {where}: {what}")


def data_lines(path: str | os.PathLike[str]) -> Lines:
    """The lines that hold data: ``#`` starts a comment (whole line or the rest of one), blank lines
    are skipped. An unreadable file, one that is not UTF-8 text, or one with no data is an error."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise trace_error(path, f"cannot read it: {exc.strerror or exc.__class__.__name__}") from None
    try:
        text = raw.decode("utf-8-sig")  # a spreadsheet's byte-order mark is not data
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise trace_error(path, "not a text file (bytes that are not UTF-8); a trace is plain text",
                          line) from None
    lines = [(n, body) for n, full in enumerate(text.split("\n"), start=1)
             if (body := full.split("#", 1)[0].strip())]
    if not lines:
        raise trace_error(path, "empty: no data lines (only blank lines or # comments)")
    return lines
