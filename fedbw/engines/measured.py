"""Measured rounds: the event log fedbw's Flower apps write, read and grouped into rounds.

The apps (fedbw.fl) log every message they exchanged with its Flower bytes, timestamps and the
client's compute time (docs/simulate.md). This module reads that log — also while it grows — and
groups it into finished rounds (:class:`~fedbw.results.measured_round.RoundEvents`). It is shared: ``simulate`` lays the rounds on
its virtual clock (:mod:`fedbw.engines.simulate.clock`), ``emulate`` joins them with its shaper's
ledger, and studies re-time them on other links.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fedbw.files.versioned import EVENTS
from fedbw.results.measured_round import RoundEvents

class EventReader:
    """Reads complete lines appended to an event log since the last call (tolerates a torn last line)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._offset = 0
        self._partial = b""

    def read_new(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
        self._offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()  # "" when the chunk ended with a newline
        return [json.loads(line) for line in lines if line.strip()]


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Every complete event in a log."""
    return EventReader(path).read_new()


class RoundAssembler:
    """Feeds events in order; :meth:`add` returns a round once its ``round_end`` arrives."""

    def __init__(self) -> None:
        self.current: dict[int, RoundEvents] = {}
        self.error: str | None = None
        self.ended = False
        self.stopped_early: str | None = None  #: the server's reason for ending before training.rounds
        self.start: dict[str, Any] | None = None
        self.node_of: dict[int, int] = {}

    def get(self, r: int) -> RoundEvents:
        return self.current.setdefault(r, RoundEvents(r))

    def add(self, ev: dict[str, Any]) -> RoundEvents | None:
        kind = ev.get("event")
        if kind == "start":
            self.start = ev
            self.error = EVENTS.problem(ev, "the apps' event log")
        elif kind == "nodes":
            self.node_of = {int(c): int(n) for c, n in ev["node_of"].items()}
        elif kind == "round_start":
            self.get(ev["round"]).clients = list(ev["clients"])
        elif kind == "message":
            self.get(ev["round"]).messages.append(ev)
        elif kind == "late":
            self.get(ev["round"]).late = [int(c) for c in ev["clients"]]
        elif kind == "halted":
            self.get(ev["round"]).halted = str(ev.get("reason") or "SecAgg+ halted")
        elif kind == "round_end":
            rnd = self.current.pop(ev["round"], RoundEvents(ev["round"]))
            rnd.loss, rnd.accuracy, rnd.wall_time_s = ev.get("loss"), ev.get("accuracy"), ev.get("wall_time_s")
            rnd.epsilon, rnd.privacy = ev.get("epsilon"), ev.get("privacy")
            rnd.finished = True
            return rnd
        elif kind == "error":
            self.error = ev.get("message", "unknown error")
        elif kind == "end":
            self.ended = True
            self.stopped_early = ev.get("stopped_early")
        return None


