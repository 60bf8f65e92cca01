"""Flower's CPU costs as terms: one expression each, used by the clock to predict and by calibration to fit.

Why: when the clock and the fitter each write a cost's formula, the two drift apart, and a fitted constant
then absorbs the difference instead of describing Flower. Here a term owns its formula once, as
*features*: what the clock knows about a piece of work (one message, its objects, its MiB, a round trip)
mapped to the constants that multiply them. The clock asks :meth:`CostTerm.seconds`; calibration builds its
least-squares rows from the same :meth:`CostTerm.features` (:mod:`fedbw.calibrate.fit`). A term is linear in
its constants; what is not linear (queues, polls, backoff) stays in the clock, which lays the terms' work
on its resources.

What is not a term: Flower's intervals (polls, backoff), which are read from Flower's source
(:mod:`fedbw.flower_protocol`, :class:`~fedbw.netmodel.flower.FlowerCosts`' interval fields), and the
link's time, which comes from the link.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MIB = 2**20


@dataclass(frozen=True)
class CostTerm:
    """One cost: the constants it owns and the features that multiply them."""

    name: str
    constants: tuple[str, ...]
    features: Callable[..., dict[str, float]]  #: keyword context → {constant: multiplier}
    doc: str  #: what the work is and why it costs what it does (docs/methodology.md shows it)

    def seconds(self, costs: Any, **context: float) -> float:
        """The term's time for this context with ``costs``' constants (any object with those attributes)."""
        return sum(getattr(costs, k) * x for k, x in self.features(**context).items())

    def row(self, **context: float) -> list[float]:
        """The features in :attr:`constants` order: one least-squares row."""
        f = self.features(**context)
        return [float(f.get(k, 0.0)) for k in self.constants]


#: Every term, by name: the clock and calibration look them up here.
TERMS: dict[str, CostTerm] = {}


def _term(name: str, constants: tuple[str, ...], doc: str) -> Callable[[Callable[..., dict[str, float]]], CostTerm]:
    def make(features: Callable[..., dict[str, float]]) -> CostTerm:
        if name in TERMS:
            raise ValueError(f"cost term {name!r} defined twice")
        TERMS[name] = CostTerm(name, constants, features, doc)
        return TERMS[name]
    return make


@_term("hop", ("hop_object_s", "hop_s_per_mib"),
       "Moving one message over one network hop, both ends' CPU: one request per object, and "
       "(de)serialising, hashing and copying its bytes. (A cost per message besides its objects was a "
       "constant too, until it failed to lower the held-out error: RETIRED in fedbw.calibration.file.)")
def HOP(objects: float, nbytes: float) -> dict[str, float]:
    return {"hop_object_s": float(objects), "hop_s_per_mib": nbytes / MIB}


@_term("local_copy", ("local_s_per_mib",),
       "Moving a message between two processes of one machine (ClientApp ↔ SuperNode, the ServerApp's push "
       "to the SuperLink): per MiB. (The ServerApp's pull of a reply, object by object, is a hop.)")
def LOCAL_COPY(nbytes: float) -> dict[str, float]:
    return {"local_s_per_mib": nbytes / MIB}


@_term("aggregation", ("aggregate_s_per_mib",),
       "The server between stages: aggregating the replies (FedAvg), per MiB of replies (its base per stage "
       "fitted to 0 and was retired).")
def AGGREGATION(reply_bytes: float) -> dict[str, float]:
    return {"aggregate_s_per_mib": reply_bytes / MIB}


@_term("clientapp_start", ("clientapp_start_s",),
       "Starting a flwr-clientapp process for a message: Python, Flower's and the app's imports.")
def CLIENTAPP_START() -> dict[str, float]:
    return {"clientapp_start_s": 1.0}


@_term("clientapp_work", ("clientapp_other_s",),
       "A ClientApp's work before the app's code runs: the runtime pull, the FAB install, loading the app.")
def CLIENTAPP_WORK() -> dict[str, float]:
    return {"clientapp_other_s": 1.0}


@_term("request", ("request_s",), "One request's server-side work: an empty pull, a confirm.")
def REQUEST() -> dict[str, float]:
    return {"request_s": 1.0}


@_term("download_round_trips", ("download_round_trips",),
       "Round trips a download makes in series besides the message's pull, its confirm and its objects "
       "(requests before the first object's body and after the last): a count times the link's round trip.")
def DOWNLOAD_ROUND_TRIPS(rtt_s: float) -> dict[str, float]:
    return {"download_round_trips": rtt_s}


@_term("app_setup", ("app_setup_s",),
       "fedbw's real-training apps in a fresh ClientApp process: importing torch, building the model.")
def APP_SETUP() -> dict[str, float]:
    return {"app_setup_s": 1.0}


def constants_of_terms() -> dict[str, str]:
    """Every fitted constant → the term that owns it."""
    return {k: t.name for t in TERMS.values() for k in t.constants}
