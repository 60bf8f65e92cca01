"""mahimahi packet-delivery traces (``mm-link UPLINK DOWNLINK``): one file per direction.

What the files mean (mahimahi's mm-link(1) man page and its ``src/frontend/link_queue.cc``):

* each line is one whole number: a time in milliseconds from the start of the trace at which the link
  may deliver one MTU-sized packet, 1500 bytes (a "delivery opportunity"); a time repeated on several
  lines is several packets in that millisecond, so times never decrease but may repeat;
* a file with no times, or whose last time is 0 (a trace that lasts no time), is refused;
* when the schedule runs out the link starts it again, shifted by the last time: the trace **loops**
  with a period of its last timestamp (a file holding just ``1`` is one packet every millisecond,
  12 Mbps, for ever).

fedbw turns the opportunities into a rate series by counting them in bins of ``bin_ms`` (default
1000 ms) over one period: rate = opportunities × 1500 × 8 bit / bin length; the last bin is shorter
when the period is not a whole number of bins, and equal neighbouring bins are merged into one step.
Beyond mahimahi, ``#`` comments and blank lines are allowed (mm-link itself refuses both).
The rates are of whole 1500-byte packets, headers included: a link rate, not TCP payload. (mm-link's
code counts 1504 bytes, its TUN payload's largest size, per opportunity: 0.27 % more than its man page's
1500, which fedbw follows.)
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from fedbw.errors import ConfigError
from fedbw.traces.text import Lines, data_lines, trace_error
from fedbw.traces.trace import RateSeries, RateTrace

#: Bytes one delivery opportunity carries (mm-link(1): "the ability to deliver 1500 bytes").
MTU_BYTES = 1500
DEFAULT_BIN_MS = 1000
_WHOLE = re.compile(r"[0-9]+")


def check_bin_ms(bin_ms: object) -> int:
    if isinstance(bin_ms, bool) or not isinstance(bin_ms, int) or bin_ms < 1:
        raise ConfigError(f"bin_ms is a whole number of milliseconds >= 1, got {bin_ms!r}")
    return bin_ms


def opportunity_times(path: str | os.PathLike[str], lines: Lines) -> list[int]:
    """The delivery-opportunity times (ms) in ``lines`` of ``path``, checked as mm-link checks them."""
    times: list[int] = []
    for line, text in lines:
        if not _WHOLE.fullmatch(text):
            raise trace_error(path, f"{text!r} is not a whole number of milliseconds (a mahimahi trace has "
                                    "one per line; a CSV trace is t_s,up_mbps,down_mbps)", line)
        ms = int(text)
        if times and ms < times[-1]:
            raise trace_error(path, f"{ms} ms comes after {times[-1]} ms; mahimahi times never decrease "
                                    "(a repeated time is another packet in that millisecond)", line)
        times.append(ms)
    if times[-1] == 0:
        raise trace_error(path, "every time is 0 ms: a mahimahi trace must last longer than 0 ms",
                          lines[-1][0])
    return times


def binned(times: list[int], bin_ms: int) -> RateSeries:
    """Opportunities counted per ``bin_ms`` bin over one period (the last time), as Mbps steps. A time
    equal to the period belongs to the next loop's first millisecond, as mm-link delivers it."""
    period = times[-1]
    bins = math.ceil(period / bin_ms)
    counts = [0] * bins
    for ms in times:
        counts[(ms % period) // bin_ms] += 1
    steps: list[tuple[float, float]] = []
    for i, count in enumerate(counts):
        length_ms = min(bin_ms, period - i * bin_ms)
        mbps = count * MTU_BYTES * 8 / (length_ms * 1e3)
        if not steps or steps[-1][1] != mbps:
            steps.append((i * bin_ms / 1e3, mbps))
    return RateSeries(tuple(steps), period / 1e3)


def parse_mahimahi(up: tuple[str | os.PathLike[str], Lines], down: tuple[str | os.PathLike[str], Lines] | None,
                   bin_ms: int = DEFAULT_BIN_MS) -> RateTrace:
    """The trace of an up file and a down file, each as ``(path, data lines)``; without ``down`` the
    one file serves both directions."""
    bin_ms = check_bin_ms(bin_ms)
    up_series = binned(opportunity_times(*up), bin_ms)
    down_series = up_series if down is None else binned(opportunity_times(*down), bin_ms)
    up_path = os.fspath(up[0])
    files = f"{up_path} (both directions)" if down is None else f"{up_path} (up), {os.fspath(down[0])} (down)"
    return RateTrace(name=Path(up_path).stem, source=f"mahimahi {files}, {bin_ms} ms bins", format="mahimahi",
                     up=up_series, down=down_series)


def read_mahimahi(up_path: str | os.PathLike[str], down_path: str | os.PathLike[str] | None = None,
                  bin_ms: int = DEFAULT_BIN_MS) -> RateTrace:
    """The mahimahi trace of ``up_path`` and ``down_path`` (or ``up_path`` for both directions)."""
    down = None if down_path is None else (down_path, data_lines(down_path))
    return parse_mahimahi((up_path, data_lines(up_path)), down, bin_ms)
