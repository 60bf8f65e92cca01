"""Link-rate traces from files: a link's rate over time, per direction, to look at now and to shape,
estimate and simulate with later (issue 32). Pure: the standard library only, no Flower, no torch, no
config.

:func:`load_trace` reads a plain CSV (``t_s,up_mbps,down_mbps``: :mod:`.csv_trace`) or mahimahi
packet-delivery files (:mod:`.mahimahi`) into a :class:`RateTrace` (:mod:`.trace`): piecewise-constant
steps per direction that loop, with time-weighted statistics and the steps in the shaper's form. Every
bad file is a :class:`~fedbw.errors.ConfigError` naming the file and line (:mod:`.text`).
"""

from fedbw.traces.csv_trace import read_csv
from fedbw.traces.load import load_trace
from fedbw.traces.mahimahi import DEFAULT_BIN_MS, MTU_BYTES, read_mahimahi
from fedbw.traces.trace import DIRECTIONS, RateSeries, RateTrace

__all__ = ["DEFAULT_BIN_MS", "DIRECTIONS", "MTU_BYTES", "RateSeries", "RateTrace", "load_trace", "read_csv",
           "read_mahimahi"]
