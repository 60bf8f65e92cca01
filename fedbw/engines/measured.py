"""Measured rounds: the event log fedbw's Flower apps write, read and grouped into rounds.

The apps (fedbw.fl) log every message they exchanged with its Flower bytes, timestamps and the
client's compute time (docs/simulate.md). This module reads that log — also while it grows — and
groups it into finished rounds of measured exchanges. It is shared: ``simulate`` lays the rounds on
its virtual clock (:mod:`fedbw.engines.simulate.clock`), ``emulate`` joins them with its shaper's
ledger, and studies re-time them on other links.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fedbw.files.versioned import EVENTS
from fedbw.netmodel import MessageSizes

#: Stages in which the client trains (plain FedAvg, SecAgg+).
COMPUTE_STAGES = ("fit", "collect_masked_vectors")


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


@dataclass
class RoundEvents:
    """Everything the apps logged about one round."""

    round: int
    clients: list[int] = field(default_factory=list)  #: sampled client ids, in plan order
    messages: list[dict[str, Any]] = field(default_factory=list)  #: "message" events, arrival order
    loss: float | None = None
    accuracy: float | None = None
    wall_time_s: float | None = None
    epsilon: float | None = None
    privacy: dict[str, Any] | None = None  #: the server's accounting context (round_end's ``privacy``)
    finished: bool = False

    def clients_done(self) -> int:
        """Clients whose training reply has arrived."""
        return len({m["client_id"] for m in self.messages if m.get("stage") in COMPUTE_STAGES})

    def errors(self) -> list[str]:
        return [f"client {m['client_id']} ({m['stage']}): {m['error']}" for m in self.messages if m.get("error")]


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


def measured_exchanges(rnd: RoundEvents) -> dict[int, list[MessageSizes]]:
    """Per client, its measured exchanges in stage order (stage order = first arrival in the round)."""
    order: list[str] = []
    for m in rnd.messages:
        if m["stage"] not in order:
            order.append(m["stage"])
    by_client: dict[int, dict[str, MessageSizes]] = {}
    for m in rnd.messages:
        compute = m.get("compute_s")
        app_s = m.get("t_app_s")
        sizes = MessageSizes(m["stage"], float(m.get("bytes_down") or 0), float(m.get("bytes_up") or 0),
                             computes=compute is not None or m["stage"] in COMPUTE_STAGES,
                             compute_s=None if compute is None else float(compute),
                             # the app's measured work besides training (SecAgg+ crypto, codecs, …)
                             client_extra_s=max(0.0, float(app_s) - float(compute or 0.0)) if app_s is not None
                             else 0.0)
        if m.get("objects_down") is not None:  # event logs of fedbw 0.1 carry no object counts
            sizes = replace(sizes, objects_down=int(m["objects_down"]), objects_up=int(m.get("objects_up") or 0))
        by_client.setdefault(m["client_id"], {})[m["stage"]] = sizes
    return {cid: [st[s] for s in order if s in st] for cid, st in by_client.items()}


def client_compute_s(rnd: RoundEvents) -> dict[int, float]:
    """Per client, the compute time it reported (measured in real mode, the profile's in synthetic)."""
    out: dict[int, float] = {}
    for m in rnd.messages:
        if m.get("compute_s") is not None:
            out[m["client_id"]] = out.get(m["client_id"], 0.0) + float(m["compute_s"])
    return out


def client_extras(rnd: RoundEvents) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for m in rnd.messages:
        if m.get("num_examples") is not None:
            out[m["client_id"]] = {"train_loss": m.get("train_loss"), "num_examples": int(m["num_examples"])}
    return out
