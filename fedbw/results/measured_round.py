"""One measured round: what fedbw's apps logged about it, and the exchanges and compute it gives the clock.

Its own module, below the apps and the engines, because both read a round this way: simulate's engine lays
each finished round of the event log on its virtual clock, and simulate's ServerApp lays the round it is in
on the same clock to decide which replies a deadline or over-selection leaves out (``[round]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from fedbw.netmodel import MessageSizes

if TYPE_CHECKING:
    from fedbw.results.records import RoundRecord

#: Stages in which the client trains (plain FedAvg, SecAgg+).
COMPUTE_STAGES = ("fit", "collect_masked_vectors")


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
    late: list[int] = field(default_factory=list)  #: clients the server's round policy closed the round without
    halted: str | None = None  #: why SecAgg+ halted the round (it aggregated nothing), None when it did not
    finished: bool = False

    def clients_done(self) -> int:
        """Clients whose training reply has arrived."""
        return len({m["client_id"] for m in self.messages if m.get("stage") in COMPUTE_STAGES})

    def errors(self) -> list[str]:
        return [f"client {m['client_id']} ({m['stage']}): {m['error']}" for m in self.messages if m.get("error")]


def mark_halted(record: RoundRecord, rnd: RoundEvents) -> None:
    """A round SecAgg+ halted aggregated nothing: its record is abandoned (the server kept its model), with
    the reason in ``extra["secagg_halted"]``. Both measuring engines' records go through here."""
    if rnd.halted is not None:
        record.abandoned = True
        record.extra["secagg_halted"] = rnd.halted


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
