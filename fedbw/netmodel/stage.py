"""One stage of a Flower deployment laid out by :class:`~fedbw.netmodel.flower.DeploymentClock`: the
messages it takes (:class:`StageMessage`), the classes of identical exchanges it works on, what it returns
per class and client (:class:`MessageTiming`, :class:`StageTiming`), and the mean of one stage laid out
in several lanes (:func:`mean_stage`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from fedbw.netmodel.transfer import ClientLink


class StageMessage(NamedTuple):
    """One client's exchange in one stage: the server's message down, the reply up, the training."""

    client_id: int
    bytes_down: float
    bytes_up: float
    objects_down: int
    objects_up: int
    compute_s: float = 0.0
    client_extra_s: float = 0.0  #: the app's own work besides training (e.g. SecAgg+ crypto), seconds


@dataclass
class MessageTiming:
    """One client's exchange laid out: link, training and Flower's parts, each in seconds."""

    client_id: int
    t_pushed_s: float  #: the ServerApp finished pushing (absolute clock)
    t_replied_s: float  #: the ServerApp has the reply (absolute clock)
    t_down_s: float
    t_compute_s: float
    t_up_s: float
    t_down_alone_s: float  #: the download had the server link to itself
    t_up_alone_s: float
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def t_framework_s(self) -> float:
        return sum(self.parts.values())


@dataclass
class Exchange:
    """A class of identical exchanges while a stage is laid out (absolute clock times): clients with the
    same message, link, CPU and poll grid get the same times up to the ServerApp's pulls, so each time is
    worked out once per class."""

    m: StageMessage  #: the first member's message (the others differ only in client_id)
    link: ClientLink
    anchor_s: float | None  #: the members' SuperNode poll anchor
    speed: float  #: client CPU relative to the calibration machine
    members: list[int] = field(default_factory=list)  #: the members' client ids
    t_pull: float = 0.0  #: the SuperNode's pull that finds the message starts
    t_down: float = 0.0  #: that pull to every object stored ("Received successfully")
    t_down_alone: float = 0.0
    t_app: float = 0.0  #: the ClientApp's code runs (message pulled, FAB installed, app loaded)
    t_done: float = 0.0  #: the ClientApp's code returns its reply
    t_ready: float = 0.0  #: the reply is stored on the SuperNode
    t_sending: float = 0.0  #: the SuperNode starts the upload (the SuperLink knows the reply)
    t_up: float = 0.0
    t_up_alone: float = 0.0

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def t_received(self) -> float:
        return self.t_pull + self.t_down

    @property
    def t_sent(self) -> float:
        return self.t_sending + self.t_up


@dataclass
class StageTiming:
    """One stage laid out: per class of identical exchanges their shared times, per client its class and
    when the ServerApp had its reply (the ServerApp pulls replies one after another)."""

    stage: str
    t_start_s: float  #: the server starts pushing
    t_end_s: float  #: every reply is in and the server has aggregated: the next stage can start
    server_s: dict[str, float]  #: push, pulls, aggregation
    classes: list[MessageTiming] = field(default_factory=list)  #: a class's times (t_replied_s: its first member's)
    client_ids: list[int] = field(default_factory=list)  #: in the order the messages came
    class_of: list[int] = field(default_factory=list)  #: each client's index in ``classes``
    t_replied_s: list[float] = field(default_factory=list)  #: each client's reply at the ServerApp (absolute)
    t_sent_s: list[float] = field(default_factory=list)  #: per class: the upload's last byte at the SuperLink
    #: every lane's span of the stage, the central lanes first, then the spread lanes (the clock's lanes)
    lane_spans_s: list[float] = field(default_factory=list)
    #: per class: the share of the central lanes in which its replies missed the stage's close (late)
    class_late: list[float] = field(default_factory=list)
    #: of the span, the time the ServerApp waited for its deadline after its last pull (central lanes' mean)
    deadline_wait_s: float = 0.0

    @property
    def messages(self) -> list[MessageTiming]:
        """Every client's exchange on its own (its class's times, its own ServerApp poll)."""
        out = []
        for cid, j, t_replied in zip(self.client_ids, self.class_of, self.t_replied_s):
            k = self.classes[j]
            out.append(MessageTiming(cid, k.t_pushed_s, t_replied, k.t_down_s, k.t_compute_s, k.t_up_s,
                                     k.t_down_alone_s, k.t_up_alone_s,
                                     {**k.parts, "serverapp_poll_s": t_replied - self.t_sent_s[j]}))
        return out


class ExchangeClass(NamedTuple):
    """Clients whose exchange is the same in every lane: message (the first member's), link, CPU, and their
    poll anchor in each lane."""

    m: StageMessage
    link: ClientLink
    speed: float
    anchors: tuple[float | None, ...]
    members: list[int]


_TIMING_FIELDS = ("t_pushed_s", "t_replied_s", "t_down_s", "t_compute_s", "t_up_s", "t_down_alone_s", "t_up_alone_s")


def mean_stage(lanes: Sequence[StageTiming]) -> StageTiming:
    """The mean of one stage laid out in several lanes (the same classes in each), class by class: every
    time, part and server cost averaged (the clients' own fields are left to the caller)."""
    n = len(lanes)
    first = lanes[0]
    classes = []
    for j, k in enumerate(first.classes):
        ks = [lane.classes[j] for lane in lanes]
        times = [sum(getattr(x, f) for x in ks) / n for f in _TIMING_FIELDS]
        classes.append(MessageTiming(k.client_id, *times, parts={p: sum(x.parts[p] for x in ks) / n for p in k.parts}))
    return StageTiming(first.stage, sum(lane.t_start_s for lane in lanes) / n, sum(lane.t_end_s for lane in lanes) / n,
                       {key: sum(lane.server_s[key] for lane in lanes) / n for key in first.server_s}, classes,
                       t_sent_s=[sum(ts) / n for ts in zip(*(lane.t_sent_s for lane in lanes))])
