"""The event log: what the apps measured, one JSON object per line, appended and flushed at once.

Engines read it (simulate tails it while the run goes; emulate can do the same) and turn it into
RoundRecords; docs/simulate.md documents every event and field. Times are ``time.perf_counter()``
seconds of the process that wrote them (CLOCK_MONOTONIC on Linux, so comparable across processes of
one machine); ``wall_time_s`` fields are durations.
"""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path
from typing import Any


#: Event names (the ``event`` field).
START, NODES, ROUND_START, MESSAGE, EVAL, ROUND_END, END, ERROR = (
    "start", "nodes", "round_start", "message", "eval", "round_end", "end", "error")
#: a round policy (``[round]``): the clients whose replies the ServerApp left out — under simulate as its
#: virtual clock decided (fedbw.fl.virtual_clock), under emulate those it had not pulled when it closed the
#: stage; the engine's records call the same clients late.
LATE = "late"
#: simulate with clients.availability: the plan's dropouts whose training replies the ServerApp left out
#: (Flower's Simulation Engine ran them to the end; the plan has them gone before their reply)
DROPPED = "dropped"
#: a SecAgg+ round Flower's workflow halted (a client kept fewer than the reconstruction threshold of its share
#: holders among the replies): it aggregated nothing, the server kept its model, and the run goes on, as
#: Flower's does (``reason``: why, in words); the engines' records call the round abandoned.
HALTED = "halted"
#: ``round_end`` field (DP or SecAgg+ runs only): what the server saw of the round's privacy — sampling,
#: adjacency, δ, the cohort it aggregated, the noise multiplier accounted, SecAgg+'s clipped and wrapped
#: counts — as a dict of :class:`fedbw.results.privacy_record.PrivacyRound` (``epsilon`` beside it is the
#: ε the server accounted for the rounds as they ran).
ROUND_END_PRIVACY = "privacy"


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if hasattr(v, "item") and callable(v.item):  # numpy scalars
        return _clean(v.item())
    return v


class EventLog:
    """Thread-safe append-only JSONL writer; every event is flushed before ``emit`` returns."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fh = self.path.open("a", encoding="utf-8")

    def emit(self, event: str, **fields: Any) -> None:
        line = json.dumps(_clean({"event": event, **fields}), sort_keys=True)
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()
            if event in (ROUND_END, END, ERROR):
                os.fsync(self._fh.fileno())

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()
