"""What a Flower 1.42 deployment cannot carry at all, whatever its timing: facts read from Flower's source at
the pinned version, and the check of a plan against them.

Why a module apart from :mod:`fedbw.flower_protocol` and :mod:`fedbw.netmodel`: those make the model's
numbers, and their code is the model's version (:mod:`fedbw.netmodel.version`); a limit here makes no number,
only a warning that a number would not happen (the reply never arrives), so it can change without
invalidating every result the model made. tests/netmodel/test_flower_constants.py reads these constants from
the installed flwr.

The push session: the SuperLink keeps a SuperNode's object-push session :data:`OBJECT_PUSH_SESSION_TTL_S`
after the session's start or its last stored object, on its own clock, then refuses what arrives later and
drops the reply. A plain update travels in chunks of at most 5 MiB, but SecAgg+'s masked vector is one
object of twice the model's bytes (stock SecAgg+), so on a slow uplink every SecAgg+ reply is lost in a
real deployment while estimate and simulate time a long round. benchmarks/push_session.py measured the
rule on real sockets (docs/emulate.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fedbw.netmodel.payload import ARRAY_CHUNK_BYTES, MessageSizes
from fedbw.netmodel.transfer import mbps_to_bytes_per_s

#: ``OBJECT_PUSH_SESSION_TTL_SECONDS`` (flwr/supercore/constant.py).
OBJECT_PUSH_SESSION_TTL_S = 180.0
#: A SuperNode pushes a reply's objects this many at a time, so they share its uplink
#: (``FLWR_PRIVATE_MAX_CONCURRENT_OBJ_PUSHES``'s default, and no more than the host's cores).
CONCURRENT_OBJECT_PUSHES = 2
#: The reply Flower sends as one unchunked object besides its framing: SecAgg+'s masked vector (a ConfigRecord
#: of bytes; fedbw.netmodel.payload.round_exchanges).
ONE_OBJECT_STAGE = "collect_masked_vectors"


def largest_object_up(sizes: MessageSizes) -> float:
    """The reply's largest object, bytes (an upper bound): the masked vector whole, else one array chunk."""
    return sizes.bytes_up if sizes.stage == ONE_OBJECT_STAGE else min(sizes.bytes_up, ARRAY_CHUNK_BYTES)


def push_gap_s(sizes: MessageSizes, up_bytes_per_s: float) -> float:
    """The longest the SuperLink waits between two stored objects of this reply on an uplink of
    ``up_bytes_per_s``: its largest object, sharing the link with the other pushes Flower runs beside it
    (each at most as large, and no more than the rest of the reply)."""
    largest = largest_object_up(sizes)
    beside = min(largest * (CONCURRENT_OBJECT_PUSHES - 1), max(0.0, sizes.bytes_up - largest))
    return (largest + beside) / up_bytes_per_s if up_bytes_per_s > 0 else float("inf")


@dataclass(frozen=True)
class LostReplies:
    """One stage's replies that some of the clients' uplinks cannot push within Flower's session."""

    stage: str
    clients: int  #: how many clients
    object_bytes: float  #: the reply's largest object
    slowest_up_mbps: float  #: the slowest of their uplinks (payload rate; a trace's mean)
    push_s: float  #: the largest object's push there

    def sentence(self, total_clients: int) -> str:
        return (f"{self.clients} of {total_clients} clients' {self.stage} reply holds one object of "
                f"{self.object_bytes / 1e6:,.2f} MB that takes up to {self.push_s:,.0f} s on the uplink (at "
                f"{self.slowest_up_mbps:.3g} Mbps of payload); Flower 1.42's SuperLink drops a push session "
                f"{OBJECT_PUSH_SESSION_TTL_S:.0f} s after its last stored object, so a real deployment would lose "
                f"these replies, while estimate and simulate time them as if they arrived (docs/emulate.md)")


def lost_replies(exchanges: list[MessageSizes], uplinks: Counter[float]) -> list[LostReplies]:
    """Every stage of ``exchanges`` (one client's; uploads are alike for every client and round) whose reply
    some uplinks cannot push within the session; ``uplinks``: payload rate (Mbps) → how many clients."""
    out = []
    for ex in exchanges:
        over = {mbps: n for mbps, n in uplinks.items()
                if push_gap_s(ex, mbps_to_bytes_per_s(mbps)) > OBJECT_PUSH_SESSION_TTL_S}
        if over:
            slowest = min(over)
            out.append(LostReplies(ex.stage, sum(over.values()), largest_object_up(ex), slowest,
                                   push_gap_s(ex, mbps_to_bytes_per_s(slowest))))
    return out
