"""One entry point for a trace file: :func:`load_trace` picks the format and reads it."""

from __future__ import annotations

import os
from pathlib import Path

from fedbw.traces.csv_trace import parse_csv
from fedbw.traces.mahimahi import DEFAULT_BIN_MS, check_bin_ms, parse_mahimahi
from fedbw.traces.text import Lines, data_lines, trace_error
from fedbw.traces.trace import RateTrace


def looks_like_csv(path: str | os.PathLike[str], lines: Lines) -> bool:
    """A ``.csv`` file, or one whose first data line has a comma, is a CSV trace; anything else is read
    as mahimahi (whose lines are single whole numbers)."""
    return Path(path).suffix.lower() == ".csv" or "," in lines[0][1]


def load_trace(path: str | os.PathLike[str], down_path: str | os.PathLike[str] | None = None,
               bin_ms: int = DEFAULT_BIN_MS) -> RateTrace:
    """The trace in ``path`` (and ``down_path``), its format chosen by :func:`looks_like_csv`:

    * a CSV trace (:mod:`fedbw.traces.csv_trace`) holds both directions, so ``down_path`` is refused;
    * a mahimahi file (:mod:`fedbw.traces.mahimahi`) holds one direction: ``path`` is the uplink and
      ``down_path`` the downlink; without ``down_path`` the one file serves both. ``bin_ms`` is the bin
      its delivery opportunities are counted in.

    Every problem with a file is a :class:`~fedbw.errors.ConfigError` naming the file and the line.
    """
    bin_ms = check_bin_ms(bin_ms)
    lines = data_lines(path)
    csv = looks_like_csv(path, lines)
    if down_path is None:
        return parse_csv(path, lines) if csv else parse_mahimahi((path, lines), None, bin_ms)
    if csv:
        raise trace_error(path, "a CSV trace holds both directions; a separate down file pairs two mahimahi files")
    down_lines = data_lines(down_path)
    if looks_like_csv(down_path, down_lines):
        raise trace_error(down_path, "the down file must be a mahimahi trace like the up file, not CSV")
    return parse_mahimahi((path, lines), (down_path, down_lines), bin_ms)
