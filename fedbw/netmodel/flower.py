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


@dataclass(frozen=True)
class StageMessage:
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
class StageTiming:
    stage: str
    t_start_s: float  #: the server starts pushing
    t_end_s: float  #: every reply is in and the server has aggregated: the next stage can start
    server_s: dict[str, float]  #: push, pulls, aggregation
    messages: list[MessageTiming]


@dataclass
class _Node:
    anchor_s: float | None = None  #: the pull right after its last reply (None: idle since it started)


@dataclass
class _Exchange:
    """One client's exchange while a stage is laid out (absolute clock times)."""

    m: StageMessage
    link: ClientLink
    node: _Node
    speed: float  #: client CPU relative to the calibration machine
    t_pull: float = 0.0  #: the SuperNode's pull that finds the message starts
    t_down: float = 0.0  #: that pull to every object stored ("Received successfully")
    t_down_alone: float = 0.0
    t_app: float = 0.0  #: the ClientApp's code runs (message pulled, FAB installed, app loaded)
    t_done: float = 0.0  #: the ClientApp's code returns its reply
    t_ready: float = 0.0  #: the reply is stored on the SuperNode
    t_sending: float = 0.0  #: the SuperNode starts the upload (the SuperLink knows the reply)
    t_up: float = 0.0
    t_up_alone: float = 0.0
    t_replied: float = 0.0  #: the ServerApp has the reply

    @property
    def t_received(self) -> float:
        return self.t_pull + self.t_down

    @property
    def t_sent(self) -> float:
        return self.t_sending + self.t_up


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
        self.nodes: dict[int, _Node] = {}

    def _uniform(self, width_s: float) -> float:
        return width_s / 2 if self.phase == "expected" else self.rng.uniform(0.0, width_s)

    def _pull_time(self, node: _Node, t_visible_s: float, rtt_s: float) -> float:
        """When the SuperNode's pull that finds a message visible from ``t_visible_s`` starts: its pulls
        start every sleep + one empty pull's round trip."""
        period = self.costs.supernode_idle_poll_s + rtt_s + self.costs.request_s
        if node.anchor_s is None:  # idle since it registered: its grid's phase is unknown
            return t_visible_s + self._uniform(period)
        return next_grid_point(node.anchor_s, period, t_visible_s)

    def run_stage(self, stage: str, messages: Sequence[StageMessage], links: Mapping[int, ClientLink],
                  server_up_bytes_per_s: float = math.inf, server_down_bytes_per_s: float = math.inf,
                  client_cpu: Mapping[int, float] | None = None, server_cpu: float = 1.0,
                  server_extra_s: float = 0.0, aggregate: bool = True) -> StageTiming:
        """Lay one stage on the clock: push, every client's exchange, the ServerApp's polls, aggregation.

        ``client_cpu[cid]`` / ``server_cpu`` divide the CPU costs (2.0 = twice as fast as the calibration
        machine). ``server_extra_s`` is server work after the replies (e.g. SecAgg+ unmasking).
        """
        c = self.costs
        t0 = self.t_s
        if not messages:
            return StageTiming(stage, t0, t0, {}, [])
        ex = [_Exchange(m, links[m.client_id], self.nodes.setdefault(m.client_id, _Node()),
                        (client_cpu or {}).get(m.client_id, 1.0)) for m in messages]
        # 1. the server pushes: the shared message body (the global model) goes to the SuperLink once
        push_s = (c.hop_message_s + c.local_cpu_s(max(m.bytes_down for m in messages))) / server_cpu
        t_pushed = t0 + push_s
        # 2. each SuperNode's pull (visible at once, objects once pushed); downloads share the server uplink
        for e in ex:
            e.t_pull = backoff_until(self._pull_time(e.node, t0, e.link.rtt_s), t_pushed, c)
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
        for e in ex:
            e.node.anchor_s = e.t_sent
        # 6. the ServerApp polls from its push on; every reply in: aggregate
        self._serverapp_polls(ex, t_pushed, server_cpu)
        t_last = max(e.t_replied for e in ex)
        agg_s = ((c.aggregate_base_s + c.aggregate_s_per_mib * sum(m.bytes_up for m in messages) / MIB) / server_cpu
                 if aggregate else 0.0)
        t_end = t_last + agg_s + server_extra_s
        timings = [MessageTiming(
            e.m.client_id, t_pushed, e.t_replied, e.t_down, e.m.compute_s, e.t_up, e.t_down_alone, e.t_up_alone,
            {"supernode_poll_s": e.t_pull - t_pushed, "clientapp_start_s": e.t_app - e.t_received,
             "app_other_s": e.m.client_extra_s, "reply_pickup_s": e.t_sending - e.t_done,
             "serverapp_poll_s": e.t_replied - e.t_sent}) for e in ex]
        pull_s = sum(c.local_cpu_s(m.bytes_up) for m in messages) / server_cpu
        self.t_s = t_end
        return StageTiming(stage, t0, t_end, {"push_s": push_s, "pull_s": pull_s, "aggregate_s": agg_s,
                                              "extra_s": server_extra_s}, timings)

    def _transfer(self, ex: list[_Exchange], direction: str, server_bytes_per_s: float) -> None:
        """Lay every exchange's transfer in ``direction`` on its own link and the shared server link.

        A transfer is its requests' round trips (metadata, then the objects ``object_workers`` at a time,
        a confirm after a pull) plus the longer of the bytes on the wire and the CPU that moves them: both
        ends work on one object while the next is on the wire.
        """
        c = self.costs
        down = direction == "down"
        flows = [Flow(e.t_pull + e.link.rtt_s if down else e.t_sending + e.link.rtt_s,
                      e.m.bytes_down if down else e.m.bytes_up,
                      e.link.down_bytes_per_s if down else e.link.up_bytes_per_s) for e in ex]
        ends = finish_times(flows, server_bytes_per_s)
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

    def _serverapp_polls(self, ex: list[_Exchange], t_pushed: float, server_cpu: float) -> None:
        """When the ServerApp has each reply: it pulls right after its push, then a poll interval after the
        end of each pull, taking every reply the SuperLink knows; a reply still uploading is pulled
        object by object behind its upload (:func:`pull_behind`)."""
        c = self.costs
        todo = sorted(ex, key=lambda e: e.t_sending)
        t = t_pushed
        while todo:
            visible = [e for e in todo if e.t_sending <= t]
            for e in visible:
                t = pull_behind(t, e.t_sending, e.t_sent, e.m.objects_up, c)
                t += c.local_cpu_s(e.m.bytes_up) / server_cpu
                e.t_replied = t
                todo.remove(e)
            if todo:
                t += (0.0 if visible else c.request_s) + c.serverapp_poll_s
