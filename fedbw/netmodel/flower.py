"""Flower's own costs in a real deployment (Deployment Engine, flwr 1.42): polls, a process per message,
serialisation, one request per object, the ServerApp's poll, aggregation — as pure arithmetic.

A message's life (docs/methodology.md, "Flower's deployment costs", with the source lines):

1. the ServerApp pushes the message (metadata first, then its objects: CPU on the server);
2. the SuperNode finds it at its next pull. An idle SuperNode pulls every 3 s (``time.sleep(3)`` after
   an empty pull); right after sending a reply it pulls at once, so its pull grid is anchored at its
   last "Sent successfully" — deterministic. Only a node idle since it started has a phase nobody knows;
3. the SuperNode downloads the objects over its link (one request per object, ≤ 5 MiB chunks, two at a
   time, sha256 on every store) while its SuperExec, polling every 1 s, starts a ``flwr-clientapp``
   process (Python + Flower imports: CPU);
4. the ClientApp pulls the message from the SuperNode (objects not there yet: back off 1, 2, 4 … s),
   runs, and hands its reply back; the SuperNode notices within its 0.5 s reply poll;
5. the SuperNode uploads the reply; the ServerApp finds it at its next poll (every 3 s after a pull,
   anchored at its push) and pulls it (CPU); a reply seen before its objects arrived backs off too;
6. when every reply is in, the server aggregates and pushes the next stage.

:class:`DeploymentClock` lays stages on one persistent virtual clock, so every SuperNode's poll grid
carries over from stage to stage and round to round, as in a real federation. The costs it uses are
:class:`FlowerCosts`: Flower's intervals (module constants of the pinned version, checked by a test) and
the CPU costs of this machine (measured by ``fedbw calibrate``). Random phases (an idle SuperNode, the
SuperExec poll) take their expected value, or a draw from a seeded generator (``sampled``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from fedbw.netmodel.secagg_cost import SecAggCostConstants
from fedbw.netmodel.sharing import Flow, finish_times
from fedbw.netmodel.transfer import ClientLink

MIB = 2**20
#: Where a message's time goes besides the link and training, in order (emulate measures the same).
FRAMEWORK_PARTS = ("supernode_poll_s", "clientapp_start_s", "app_other_s", "reply_pickup_s", "serverapp_poll_s")
PHASES = ("expected", "sampled")


@dataclass(frozen=True)
class FlowerCosts:
    """Flower 1.42's intervals and this machine's CPU costs of its Deployment Engine.

    Intervals are Flower's module constants (tests/netmodel/test_flower_constants.py reads them from the
    installed flwr). CPU costs are those of the calibration machine; ``client_cpu`` / ``server_cpu``
    arguments of :class:`DeploymentClock` scale them for faster or slower devices.
    """

    supernode_idle_poll_s: float = 3.0  #: SuperNode sleep after an empty pull
    superexec_poll_s: float = 1.0  #: SuperExec task poll (FLWR_SUPEREXEC_TASK_POLL_INTERVAL)
    reply_poll_s: float = 0.5  #: SuperNode waits for its ClientApp's reply
    serverapp_poll_s: float = 3.0  #: HttpGrid.send_and_receive between pulls
    backoff_first_s: float = 1.0  #: pull of an object not uploaded yet: 1, 2, 4 … s
    backoff_cap_s: float = 10.0
    object_workers: int = 2  #: concurrent object requests per hop
    # CPU costs (seconds), measured by `fedbw calibrate` on the calibration machine
    request_s: float = 0.012  #: one request's server-side work (an empty pull, a confirm)
    hop_message_s: float = 0.03  #: per message per hop: tree building, metadata, confirm
    hop_object_s: float = 0.002  #: per object per hop: one POST's own work
    hop_s_per_mib: float = 0.02  #: per MiB per hop: (de)serialise, sha256 on every store, copy
    clientapp_start_s: float = 1.4  #: a flwr-clientapp process: Python, Flower and the app's imports
    clientapp_other_s: float = 0.35  #: ClientApp work before the app's code: runtime pull, FAB install, load
    #: per MiB moved between processes of one machine (ClientApp ↔ SuperNode, ServerApp ↔ SuperLink)
    local_s_per_mib: float = 0.005
    app_setup_s: float = 0.0  #: fedbw's real-training apps per fresh process: import torch, build the model
    aggregate_base_s: float = 0.06  #: server between stages: aggregate, configure, sample nodes
    aggregate_s_per_mib: float = 0.004  #: ... per MiB of replies aggregated
    #: SecAgg+'s crypto per primitive (keys, shares, masks), for the stages' client and server work
    secagg: SecAggCostConstants | None = None

    def hop_cpu_s(self, objects: int, nbytes: float) -> float:
        """CPU time of moving one message of ``objects`` objects over one hop (both ends)."""
        return self.hop_message_s + self.hop_object_s * objects + self.hop_s_per_mib * nbytes / MIB

    def local_cpu_s(self, nbytes: float) -> float:
        """CPU time of moving ``nbytes`` between two processes of one machine (no network hop between)."""
        return self.local_s_per_mib * nbytes / MIB

    def request_rounds(self, objects: int) -> int:
        """Object requests in sequence when ``object_workers`` run at once."""
        return math.ceil(objects / self.object_workers) if objects > 0 else 0


def costs_from_json(data: Mapping[str, object]) -> FlowerCosts:
    """FlowerCosts from ``dataclasses.asdict`` of one (the plan file carries them so)."""
    d = dict(data)
    crypto = d.pop("secagg", None)
    return FlowerCosts(**d, secagg=None if crypto is None else SecAggCostConstants.from_json(crypto))  # type: ignore[arg-type]


def backoff_until(t_attempt_s: float, t_available_s: float, costs: FlowerCosts) -> float:
    """When a pull that first failed at ``t_attempt_s`` gets objects that arrive at ``t_available_s``:
    the first retry point at or after their arrival (retries after 1, 2, 4, … s, capped)."""
    if t_available_s <= t_attempt_s:
        return t_attempt_s
    t, delay = t_attempt_s, costs.backoff_first_s
    while t < t_available_s:
        t += delay
        delay = min(2 * delay, costs.backoff_cap_s)
    return t


def pull_behind(t_start_s: float, t_first_s: float, t_all_s: float, objects: int, costs: FlowerCosts) -> float:
    """When a pull that starts at ``t_start_s`` has every object of a message that is still arriving.

    The objects become available one after another between ``t_first_s`` and ``t_all_s`` (the root,
    last, at ``t_all_s``), in the order Flower pulls them (post-order, as they were pushed);
    ``object_workers`` workers each take the next object and, while it is not there yet, retry after
    1, 2, 4 … s counted from their first try of that object (Flower's ``pull_objects``).
    """
    if t_all_s <= t_start_s:
        return t_start_s
    n = max(1, objects)
    free = [t_start_s] * max(1, costs.object_workers)
    done = t_start_s
    for i in range(n):
        avail = t_all_s if i == n - 1 else t_first_s + (t_all_s - t_first_s) * (i + 1) / n
        w = min(range(len(free)), key=free.__getitem__)
        free[w] = backoff_until(free[w], avail, costs)
        done = max(done, free[w])
    return done


def next_grid_point(anchor_s: float, period_s: float, t_s: float) -> float:
    """The first point ``anchor + k·period`` (k ≥ 0) at or after ``t_s``."""
    if t_s <= anchor_s:
        return anchor_s
    return anchor_s + math.ceil((t_s - anchor_s) / period_s - 1e-12) * period_s


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
class _Exchange:
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


class DeploymentClock:
    """One federation's virtual clock: stages one after another, SuperNode poll grids carried along.

    ``phase = "expected"`` gives every unknown phase its mean (an idle SuperNode waits half its poll,
    a SuperExec half its poll); ``"sampled"`` draws them from ``random.Random(seed)``.
    """

    def __init__(self, costs: FlowerCosts, phase: str = "expected", seed: int = 0) -> None:
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
        self.costs, self.phase = costs, phase
        self.rng = random.Random(f"{seed}:flower-phases")
        self.t_s = 0.0
        #: each SuperNode's poll anchor: its pull right after its last reply (absent: idle since it started)
        self.anchors: dict[int, float] = {}

    def _uniform(self, width_s: float) -> float:
        return width_s / 2 if self.phase == "expected" else self.rng.uniform(0.0, width_s)

    def _pull_time(self, anchor_s: float | None, t_visible_s: float, rtt_s: float) -> float:
        """When the SuperNode's pull that finds a message visible from ``t_visible_s`` starts: its pulls
        start every sleep + one empty pull's round trip."""
        period = self.costs.supernode_idle_poll_s + rtt_s + self.costs.request_s
        if anchor_s is None:  # idle since it registered: its grid's phase is unknown
            return t_visible_s + self._uniform(period)
        return next_grid_point(anchor_s, period, t_visible_s)

    def _classes(self, messages: Sequence[StageMessage], links: Mapping[int, ClientLink],
                 client_cpu: Mapping[int, float]) -> tuple[list[_Exchange], list[int]]:
        """The stage's classes of identical exchanges, in the order of their first member, and each
        message's class. With sampled phases every exchange draws its own: no two are alike."""
        classes: list[_Exchange] = []
        members: list[list[int]] = []  # each class's client ids (the same lists as the classes' ``members``)
        class_of: list[int] = []
        index: dict[tuple[object, ...], int] = {}
        grouped = self.phase == "expected"
        anchor_of, speed_of = self.anchors.get, client_cpu.get  # once per client: local names save the lookups
        for m in messages:
            cid = m[0]
            link, speed, anchor = links[cid], speed_of(cid, 1.0), anchor_of(cid)
            key = (m[1:], id(link), speed, anchor)  # the links live through the call: ids are theirs
            j = index.get(key, -1) if grouped else -1
            if j < 0:
                j = len(classes)
                classes.append(_Exchange(m, link, anchor, speed))
                members.append(classes[j].members)
                if grouped:
                    index[key] = j
            members[j].append(cid)
            class_of.append(j)
        return classes, class_of

    def run_stage(self, stage: str, messages: Sequence[StageMessage], links: Mapping[int, ClientLink],
                  server_up_bytes_per_s: float = math.inf, server_down_bytes_per_s: float = math.inf,
                  client_cpu: Mapping[int, float] | None = None, server_cpu: float = 1.0,
                  server_extra_s: float = 0.0, aggregate: bool = True) -> StageTiming:
        """Lay one stage on the clock: push, every client's exchange, the ServerApp's polls, aggregation.

        ``client_cpu[cid]`` / ``server_cpu`` divide the CPU costs (2.0 = twice as fast as the calibration
        machine; a client absent from ``client_cpu`` is as fast as it). ``server_extra_s`` is server work
        after the replies (e.g. SecAgg+ unmasking).
        """
        c = self.costs
        t0 = self.t_s
        if not messages:
            return StageTiming(stage, t0, t0, {})
        ex, class_of = self._classes(messages, links, client_cpu or {})
        # 1. the server pushes: the shared message body (the global model) goes to the SuperLink once
        push_s = (c.hop_message_s + c.local_cpu_s(max(e.m.bytes_down for e in ex))) / server_cpu
        t_pushed = t0 + push_s
        # 2. each SuperNode's pull (visible at once, objects once pushed); downloads share the server uplink
        for e in ex:
            e.t_pull = backoff_until(self._pull_time(e.anchor_s, t0, e.link.rtt_s), t_pushed, c)
        self._transfer(ex, "down", server_up_bytes_per_s)
        # 3-4. the SuperExec (polling) launches a ClientApp process at "Receiving"; it pulls the message
        #      from the SuperNode (backing off if the download is not done), runs, hands the reply back;
        #      the SuperNode's reply poll, anchored at "Received", notices it
        for e in ex:
            m, s = e.m, e.speed
            t_running = e.t_pull + self._uniform(c.superexec_poll_s) + c.clientapp_start_s / s
            t_has = pull_behind(t_running, e.t_pull, e.t_received, m.objects_down, c) + c.local_cpu_s(m.bytes_down) / s
            e.t_app = t_has + c.clientapp_other_s / s
            e.t_done = e.t_app + m.client_extra_s + m.compute_s
            e.t_ready = e.t_done + c.local_cpu_s(m.bytes_up) / s
            polls = math.ceil((e.t_ready - e.t_received) / c.reply_poll_s - 1e-12)
            e.t_sending = e.t_received + max(polls, 0) * c.reply_poll_s
        # 5. uploads share the server's downlink; each SuperNode pulls again at once after its reply
        self._transfer(ex, "up", server_down_bytes_per_s)
        anchors = self.anchors
        for e in ex:
            anchors.update(dict.fromkeys(e.members, e.t_sent))
        # 6. the ServerApp polls from its push on; every reply in: aggregate
        replied = self._serverapp_polls(ex, class_of, t_pushed, server_cpu)
        t_last = max(replied)
        bytes_up = [e.m.bytes_up for e in ex]
        agg_s = ((c.aggregate_base_s + c.aggregate_s_per_mib * sum(map(bytes_up.__getitem__, class_of)) / MIB)
                 / server_cpu if aggregate else 0.0)
        t_end = t_last + agg_s + server_extra_s
        first: dict[int, int] = {}  # each class's first member
        for k, j in enumerate(class_of):
            first.setdefault(j, k)
        timings = [MessageTiming(e.m.client_id, t_pushed, replied[first[j]], e.t_down, e.m.compute_s, e.t_up,
                                 e.t_down_alone, e.t_up_alone,
                                 {"supernode_poll_s": e.t_pull - t_pushed, "clientapp_start_s": e.t_app - e.t_received,
                                  "app_other_s": e.m.client_extra_s, "reply_pickup_s": e.t_sending - e.t_done})
                   for j, e in enumerate(ex)]
        pulls = [c.local_cpu_s(b) for b in bytes_up]
        pull_s = sum(map(pulls.__getitem__, class_of)) / server_cpu
        self.t_s = t_end
        return StageTiming(stage, t0, t_end, {"push_s": push_s, "pull_s": pull_s, "aggregate_s": agg_s,
                                              "extra_s": server_extra_s}, timings,
                           [m[0] for m in messages], class_of, replied, [e.t_sent for e in ex])

    def _transfer(self, ex: list[_Exchange], direction: str, server_bytes_per_s: float) -> None:
        """Lay every class's transfer in ``direction`` on its own link and the shared server link.

        A transfer is its requests' round trips (metadata, then the objects ``object_workers`` at a time,
        a confirm after a pull) plus the longer of the bytes on the wire and the CPU that moves them: both
        ends work on one object while the next is on the wire.
        """
        c = self.costs
        down = direction == "down"
        flows = [Flow(e.t_pull + e.link.rtt_s if down else e.t_sending + e.link.rtt_s,
                      e.m.bytes_down if down else e.m.bytes_up,
                      e.link.down_bytes_per_s if down else e.link.up_bytes_per_s) for e in ex]
        ends = finish_times(flows, server_bytes_per_s, [e.count for e in ex])
        for e, f, end in zip(ex, flows, ends):
            objects = e.m.objects_down if down else e.m.objects_up
            cpu = c.hop_cpu_s(objects, f.size_bytes) / e.speed
            fixed = e.link.rtt_s * ((2 if down else 1) + c.request_rounds(objects))
            alone = f.size_bytes / f.cap_bytes_per_s if f.cap_bytes_per_s > 0 else math.inf
            shared, solo = fixed + max(end - f.start_s, cpu), fixed + max(alone, cpu)
            if down:
                e.t_down, e.t_down_alone = shared, solo
            else:
                e.t_up, e.t_up_alone = shared, solo

    def _serverapp_polls(self, ex: list[_Exchange], class_of: list[int], t_pushed: float,
                         server_cpu: float) -> list[float]:
        """When the ServerApp has each client's reply: it pulls right after its push, then a poll interval
        after the end of each pull, taking every reply the SuperLink knows, one after another; a reply
        still uploading is pulled object by object behind its upload (:func:`pull_behind`)."""
        c = self.costs
        sending = [e.t_sending for e in ex]
        sent = [e.t_sent for e in ex]
        objects = [e.m.objects_up for e in ex]
        pull_cpu = [c.local_cpu_s(e.m.bytes_up) / server_cpu for e in ex]
        # clients in the order their replies reach the SuperLink (ties: message order)
        order = sorted(range(len(class_of)), key=[sending[j] for j in class_of].__getitem__)
        replied = [0.0] * len(class_of)
        t, pos, n = t_pushed, 0, len(order)
        while pos < n:
            visible, t_poll = 0, t  # the replies the SuperLink knows when this poll's pull starts
            while pos < n and sending[j := class_of[order[pos]]] <= t_poll:
                if sent[j] > t:  # still uploading: pulled behind it
                    t = pull_behind(t, sending[j], sent[j], objects[j], c)
                t += pull_cpu[j]
                replied[order[pos]] = t
                pos += 1
                visible += 1
            if pos < n:
                t += (0.0 if visible else c.request_s) + c.serverapp_poll_s
        return replied
