"""When the server stops waiting for a training stage's replies: a reporting deadline, or enough replies.

Production federated learning does not wait for its slowest client. It over-selects (asks ~30 % more clients
than it needs) and closes the round when enough replies are in or at a reporting deadline, whichever comes
first (Bonawitz et al., "Towards Federated Learning at Scale", 2019; FedScale over-commits by 1.3×). In
Flower's terms the deadline is the message API's reply timeout: ``Grid.send_and_receive(messages,
timeout=…)`` pulls replies until every reply is in or the timeout has passed, checking the time before each
pull (flwr 1.42 ``HttpGrid.send_and_receive``: ``while time.time() < end_time: pull; … sleep(3)``), so the
stage ends at the first poll at or after the deadline and a reply that arrives after the last pull before it
is late. "Enough" is the server pulling until it holds that many replies.

A late client still does all its work: it downloads, trains and uploads; the server just does not use its
update (its bytes and compute are spent and wasted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from fedbw.netmodel.payload import MessageSizes


@dataclass(frozen=True)
class StageClose:
    """A training stage's closing rule. ``deadline_s``: seconds after the server has pushed the stage's
    messages (None: no deadline); ``enough``: the server stops pulling once it holds this many replies (None:
    it waits for every one)."""

    deadline_s: float | None = None
    enough: int | None = None

    def __post_init__(self) -> None:
        if self.deadline_s is not None and not self.deadline_s > 0:
            raise ValueError(f"deadline_s must be > 0, got {self.deadline_s}")
        if self.enough is not None and self.enough < 1:
            raise ValueError(f"enough must be ≥ 1, got {self.enough}")

    @property
    def closes_early(self) -> bool:
        return self.deadline_s is not None or self.enough is not None

    def end_s(self, t_pushed_s: float) -> float:
        """The deadline on the clock (inf: none)."""
        return math.inf if self.deadline_s is None else t_pushed_s + self.deadline_s

    def wanted(self, sent: int) -> int:
        """How many replies close the stage before the deadline (all of them without ``enough``)."""
        return sent if self.enough is None else min(self.enough, sent)


WAIT_FOR_ALL = StageClose()

#: The first SecAgg+ stage a client that dropped after the share exchange misses: the server pushes it its
#: masked-vector request and waits for the reply that never comes.
DROPOUT_STAGE = "collect_masked_vectors"


@dataclass(frozen=True)
class SecAggDropouts:
    """Clients that drop after a SecAgg+ round's share exchange (``privacy.secagg.dropout``): they are sent
    ``stage``'s message and never answer. Flower's ServerApp keeps pulling until their messages come back
    as errors, when the SuperLink stops counting them on line (their last heartbeat + interval × patience:
    :data:`fedbw.flower_protocol.HEARTBEAT_INTERVAL_S`), or until the stage's own timeout (``timeout_s``,
    ``SecAggPlusWorkflow(timeout=…)``), whichever comes first. From then on they are gone: the unmasking
    reconstructs what they owed (:func:`fedbw.netmodel.secagg_cost.server_stage_s`)."""

    clients: frozenset[int]
    stage: str = DROPOUT_STAGE
    timeout_s: float | None = None

    def cut(self, exchanges: list[MessageSizes]) -> list[MessageSizes]:
        """A dropped client's stage messages: those before the stage it misses."""
        stages = [e.stage for e in exchanges]
        return exchanges[:stages.index(self.stage)] if self.stage in stages else exchanges

    def messages(self, client_id: int, exchanges: list[MessageSizes]) -> list[MessageSizes]:
        """A client's stage messages as far as it gets."""
        return self.cut(exchanges) if client_id in self.clients else exchanges


def close_links_only(t_start_s: float, finishes_s: Sequence[float], close: StageClose) -> tuple[float, list[bool]]:
    """A stage without Flower's polls: each reply counts the moment it arrives (``finishes_s``, on the clock).

    Returns when the stage closes (the ``enough``-th reply, else the last, but never after the deadline) and,
    per reply, whether it was late. Ties at the ``enough``-th reply keep the earlier client (input order).
    """
    n = len(finishes_s)
    if n == 0:
        return t_start_s, []
    end = close.end_s(t_start_s)
    order = sorted(range(n), key=finishes_s.__getitem__)
    wanted = close.wanted(n)
    t_close = finishes_s[order[wanted - 1]]
    if t_close > end:
        t_close = end
    late = [True] * n
    taken = 0
    for i in order:
        if taken >= wanted or finishes_s[i] > t_close:
            break
        late[i] = False
        taken += 1
    return t_close, late
