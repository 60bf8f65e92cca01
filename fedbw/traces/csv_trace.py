"""Plain CSV traces: one row per step, ``t_s,up_mbps,down_mbps``.

* ``#`` starts a comment (a whole line or the end of one); blank lines are skipped.
* An optional header: the first data line, exactly ``t_s,up_mbps,down_mbps`` (any case, spaces around
  the names allowed). Any other first line that is not numbers is an error, so swapped columns
  (``t_s,down_mbps,up_mbps``) are refused, not read the wrong way round.
* Each row: three comma-separated numbers: the step's start in seconds and the two rates in Mbps
  (10^6 bit/s). The first row is at ``t_s = 0``; times increase strictly; rates are finite and ≥ 0
  (0 = the link is down for that step).
* From each row on its rates hold until the next row; the last row's hold as long as the step before
  it (so regularly sampled measurements keep their last sample), which is why a trace needs at least
  two rows. The trace then loops (see :mod:`fedbw.traces.trace`).
* A direction whose every rate is 0 is refused: that link would never carry a byte.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from fedbw.traces.text import Lines, data_lines, trace_error
from fedbw.traces.trace import RateSeries, RateTrace

HEADER = ("t_s", "up_mbps", "down_mbps")


def _number(path: str | os.PathLike[str], line: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise trace_error(path, f"{column} {text!r} is not a number", line) from None
    if not math.isfinite(value):
        raise trace_error(path, f"{column} is {text!r}; give a finite number", line)
    return value


def _is_header(fields: list[str]) -> bool:
    try:
        float(fields[0])
    except ValueError:
        return True
    return False


def parse_csv(path: str | os.PathLike[str], lines: Lines) -> RateTrace:
    """The trace in ``lines`` (as :func:`~fedbw.traces.text.data_lines` gives them) of the CSV file ``path``."""
    first_line, first = lines[0]
    if _is_header(fields := [f.strip() for f in first.split(",")]):
        if tuple(f.lower() for f in fields) != HEADER:
            raise trace_error(path, f"the header must be {','.join(HEADER)}, got {first!r}", first_line)
        lines = lines[1:]
    if len(lines) < 2:
        raise trace_error(path, f"{len(lines)} row(s); a trace needs two rows or more (the last row lasts "
                                "as long as the step before it); a fixed rate needs no trace")
    rows: list[tuple[int, float, float, float]] = []
    for line, text in lines:
        fields = [f.strip() for f in text.split(",")]
        if len(fields) != len(HEADER):
            raise trace_error(path, f"{len(fields)} column(s); a row is {','.join(HEADER)}", line)
        t_s, up, down = (_number(path, line, name, f) for name, f in zip(HEADER, fields))
        if not rows and t_s != 0.0:
            raise trace_error(path, f"the first row is at t_s = {t_s:g}; a trace starts at t_s = 0", line)
        if rows and t_s == rows[-1][1]:
            raise trace_error(path, f"t_s = {t_s:g} repeats the row before (line {rows[-1][0]}); "
                                    "times increase strictly", line)
        if rows and t_s < rows[-1][1]:
            raise trace_error(path, f"t_s = {t_s:g} comes after t_s = {rows[-1][1]:g}; rows are in time order",
                              line)
        for name, rate in (("up_mbps", up), ("down_mbps", down)):
            if rate < 0.0:
                raise trace_error(path, f"{name} is {rate:g}; a rate is >= 0 Mbps (0 = link down)", line)
        rows.append((line, t_s, up, down))
    duration = 2 * rows[-1][1] - rows[-2][1]
    series = {}
    for column, name in ((2, "up"), (3, "down")):
        if all(row[column] == 0.0 for row in rows):
            raise trace_error(path, f"every {name}_mbps is 0 (lines {rows[0][0]}-{rows[-1][0]}): that link "
                                    "would never carry a byte")
        series[name] = RateSeries(tuple((row[1], row[column]) for row in rows), duration)
    return RateTrace(name=Path(path).stem, source=f"csv {os.fspath(path)}", format="csv", **series)


def read_csv(path: str | os.PathLike[str]) -> RateTrace:
    """The CSV trace at ``path``; any problem is a :class:`~fedbw.errors.ConfigError` naming file and line."""
    return parse_csv(path, data_lines(path))


def csv_text(trace: RateTrace, step_s: float, header_comment: str = "") -> str:
    """``trace`` as a CSV trace sampled every ``step_s`` seconds over one period, one row per step, so
    that :func:`read_csv` reads back the same rates (the last row lasts a step, as the rows before it).
    Both directions must share the period, and it must be a whole number of steps."""
    period = trace.up.duration_s
    n = round(period / step_s)
    if trace.down.duration_s != period or n < 2 or not math.isclose(n * step_s, period, rel_tol=1e-9):
        raise ValueError(f"a CSV trace needs both directions on one period of whole {step_s:g} s steps "
                         f"(up {trace.up.duration_s:g} s, down {trace.down.duration_s:g} s)")
    lines = [f"# {line}" for line in header_comment.splitlines()] + [",".join(HEADER)]
    for i in range(n):
        t = i * step_s
        lines.append(f"{t:.10g},{trace.up.mbps_at(t):.10g},{trace.down.mbps_at(t):.10g}")
    return "\n".join(lines) + "\n"
