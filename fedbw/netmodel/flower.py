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
4. the ClientApp pulls the message from the SuperNode, which stores the objects only once it has them all
   (until then: back off 1, 2, 4 … s, ± 20 %; the clock takes the mean over that jitter), runs, and hands
   its reply back; the SuperNode notices within its 0.5 s reply poll;
5. the SuperNode uploads the reply; the ServerApp finds it at its next poll (every 3 s after a pull,
   anchored at its push) and pulls it (CPU); a reply seen before its objects arrived backs off too;
6. when every reply is in, the server aggregates and pushes the next stage.

:class:`DeploymentClock` lays stages on one persistent virtual clock, so every SuperNode's poll grid
carries over from stage to stage and round to round, as in a real federation. The costs it uses are
:class:`FlowerCosts`: Flower's intervals (module constants of the pinned version, checked by a test) and
the CPU costs of this machine (measured by ``fedbw calibrate``).

Two phases nobody knows — an idle SuperNode's poll grid, the SuperExec's 1 s poll — are random. Every
other wait is a step function of them: a reply that reaches the SuperLink a few milliseconds after one of
the ServerApp's 3 s polls waits a whole interval more. So a round laid out at the mean phase
(``expected``) is one possible round, and it can sit a whole poll interval from the mean round. The
default, ``averaged``, lays the federation out once per quadrature node of the phase (``AVERAGED_LANES``
lanes, each its own persistent clock, phase-locked as a real federation is) and reports the mean of the
lanes: the expected round. ``sampled`` draws every phase from a seeded generator (one possible run).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from fedbw.flower_protocol import HEARTBEAT_INTERVAL_S, HEARTBEAT_PATIENCE
from fedbw.netmodel.close import WAIT_FOR_ALL, SecAggDropouts, StageClose
from fedbw.netmodel.flower_costs import (MIB, FlowerCosts, app_code_runs_s, backoff_until, costs_from_json,  # noqa: F401
                                         download_alone_s, objects_alone_s, pull_behind)
from fedbw.netmodel.sharing import Flow, finish_times
from fedbw.netmodel.spread import DRAWS, cost_draws
from fedbw.netmodel.terms import CLIENTAPP_START, REQUEST
from fedbw.netmodel.stage import Exchange, ExchangeClass, MessageTiming, StageMessage, StageTiming, mean_stage
from fedbw.netmodel.transfer import ClientLink

PHASES = ("averaged", "expected", "sampled")
#: Quadrature nodes of the unknown phases under ``phase = "averaged"``: lanes of the clock, averaged.
AVERAGED_LANES = 8


def next_grid_point(anchor_s: float, period_s: float, t_s: float) -> float:
    """The first point ``anchor + k·period`` (k ≥ 0) at or after ``t_s``."""
    if t_s <= anchor_s:
        return anchor_s
    return anchor_s + math.ceil((t_s - anchor_s) / period_s - 1e-12) * period_s


class _Lane:
    """One trajectory of a federation's clock: its time, every SuperNode's poll anchor (its pull right after
    its last reply; absent: idle since it started) and the phase of its unknown polls (None: their mean or
    a draw)."""

    __slots__ = ("t_s", "anchors", "u", "costs")

    def __init__(self, u: float | None, costs: FlowerCosts) -> None:
        self.t_s = 0.0
        self.anchors: dict[int, float] = {}
        self.u = u
        self.costs = costs  #: the constants this lane runs on: the calibration's, or a draw from their intervals


class DeploymentClock:
    """One federation's virtual clock: stages one after another, SuperNode poll grids carried along.

    ``phase = "averaged"`` runs ``lanes`` copies of the clock, lane q with every unknown phase (an idle
    SuperNode's grid, the SuperExec's poll) at the quantile (q + ½)/lanes of its distribution, and returns
    each stage as the mean of the lanes (the expected stage; each lane stays a consistent federation from
    round to round). ``"expected"`` gives every unknown phase its mean (one lane); ``"sampled"`` draws them
    from ``random.Random(seed)``. Each client draws its own phases, and a stage waits for its slowest
    client: a class of n clients alike is laid out as its slowest member, whose phase is the largest of n
    uniform ones (quantile u^(1/n) in lane u, mean n/(n + 1) of the interval in ``"expected"``).

    Beside these lanes, whose mean is the stage, *spread lanes* lay the same phases out with the constants
    drawn ``draws`` times from the calibration's intervals (:mod:`fedbw.netmodel.spread`; none when the
    costs carry no intervals): every lane's stage span is kept (:attr:`StageTiming.lane_spans_s`), and a
    round's interval is the quantiles of all lanes' rounds.
    """

    def __init__(self, costs: FlowerCosts, phase: str = "expected", seed: int = 0,
                 lanes: int = AVERAGED_LANES, array_shares: Sequence[float] = (), draws: int = DRAWS) -> None:
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
        if lanes < 1:
            raise ValueError(f"lanes must be at least 1, got {lanes}")
        self.costs, self.phase = costs, phase
        #: the model's arrays as fractions of its values (how a message's bytes split into objects)
        self.array_shares = tuple(array_shares)
        self.rng = random.Random(f"{seed}:flower-phases")
        phases = [(q + 0.5) / lanes for q in range(lanes)] if phase == "averaged" else [None]
        self.lanes = [_Lane(u, costs) for u in phases]
        #: the lanes whose mean is the stage; the rest are the spread lanes
        self.central = len(self.lanes)
        self.lanes += [_Lane(u, drawn) for drawn in cost_draws(costs, draws, seed) for u in phases]

    @property
    def t_s(self) -> float:
        """The clock's time: the end of the last stage (the central lanes' mean)."""
        central = self.lanes[:self.central]
        return sum(lane.t_s for lane in central) / len(central)

    def _phase(self, width_s: float, lane: _Lane, members: int) -> float:
        """A wait for an unknown phase within ``width_s``: the slowest of ``members`` clients alike (the
        largest of that many uniform phases), at the lane's quantile, at its mean, or drawn (sampled
        phases group no clients: one member)."""
        if lane.u is not None:
            return width_s * lane.u ** (1.0 / members)
        if self.phase == "expected":
            return width_s * members / (members + 1)
        return self.rng.uniform(0.0, width_s)

    def _pull_time(self, lane: _Lane, e: Exchange, t_visible_s: float) -> float:
        """When the SuperNode's pull that finds a message visible from ``t_visible_s`` starts: its pulls
        start every sleep + one empty pull's round trip."""
        period = lane.costs.supernode_idle_poll_s + e.link.rtt_s + REQUEST.seconds(lane.costs)
        if e.anchor_s is None:  # idle since it registered: its grid's phase is unknown
            return t_visible_s + self._phase(period, lane, e.count)
        return next_grid_point(e.anchor_s, period, t_visible_s)

    def _classes(self, messages: Sequence[StageMessage], links: Mapping[int, ClientLink],
                 client_cpu: Mapping[int, float]) -> tuple[list[ExchangeClass], list[int]]:
        """The stage's classes of identical exchanges, in the order of their first member, and each
        message's class. With sampled phases every exchange draws its own: no two are alike. Members share
        their poll anchor in every lane, so the classes are the same in every lane."""
        classes: list[ExchangeClass] = []
        class_of: list[int] = []
        index: dict[tuple[object, ...], int] = {}
        grouped = self.phase != "sampled"
        speed_of = client_cpu.get
        lanes = self.lanes
        if len(lanes) == 1:  # one lane: its anchor alone (local names save the lookups, once per client)
            anchor_of = lanes[0].anchors.get
        else:
            maps = [lane.anchors for lane in lanes]
            def anchor_of(cid: int) -> tuple[float | None, ...]:  # noqa: E306 — every lane's anchor
                return tuple(m.get(cid) for m in maps)
        for m in messages:
            cid = m[0]
            link, speed, anchor = links[cid], speed_of(cid, 1.0), anchor_of(cid)
            key = (m[1:], id(link), speed, anchor)  # the links live through the call: ids are theirs
            j = index.get(key, -1) if grouped else -1
            if j < 0:
                j = len(classes)
                classes.append(ExchangeClass(m, link, speed, anchor if len(lanes) > 1 else (anchor,), []))
                if grouped:
                    index[key] = j
            classes[j].members.append(cid)
            class_of.append(j)
        return classes, class_of

    def run_stage(self, stage: str, messages: Sequence[StageMessage], links: Mapping[int, ClientLink],
                  server_up_bytes_per_s: float = math.inf, server_down_bytes_per_s: float = math.inf,
                  client_cpu: Mapping[int, float] | None = None, server_cpu: float = 1.0,
                  server_extra_s: float = 0.0, aggregate: bool = True,
                  close: StageClose = WAIT_FOR_ALL, silent: SecAggDropouts | None = None) -> StageTiming:
        """Lay one stage on the clock: push, every client's exchange, the ServerApp's polls, aggregation.

        ``client_cpu[cid]`` / ``server_cpu`` divide the CPU costs (2.0 = twice as fast as the calibration
        machine; a client absent from ``client_cpu`` is as fast as it). ``server_extra_s`` is server work
        after the replies (e.g. SecAgg+ unmasking). ``close``: the ServerApp stops pulling at a deadline or
        once it holds enough replies (:mod:`fedbw.netmodel.close`); a reply it never pulled is late in that
        lane, and :attr:`StageTiming.class_late` is the share of the central lanes in which it was. With
        several lanes the stage is their mean. ``silent``: clients sent this stage's message that never answer
        (SecAgg+ dropouts, not in ``messages``): the ServerApp pulls on until Flower reports them gone.
        """
        if not messages:
            t0 = self.t_s
            return StageTiming(stage, t0, t0, {})
        classes, class_of = self._classes(messages, links, client_cpu or {})
        lanes = [self._lay_stage(lane, i, stage, classes, server_up_bytes_per_s, server_down_bytes_per_s,
                                 server_cpu, server_extra_s, aggregate, close, silent)
                 for i, lane in enumerate(self.lanes)]
        central = lanes[:self.central]
        st = central[0] if len(central) == 1 else mean_stage(central)
        st.lane_spans_s = [lane.t_end_s - lane.t_start_s for lane in lanes]
        st.class_late = [sum(lane.class_late[j] for lane in central) / len(central) for j in range(len(classes))]
        st.deadline_wait_s = sum(lane.deadline_wait_s for lane in central) / len(central)
        # the ServerApp pulls a class's replies one after another from its class's start: each member's own
        pull_each = [self.costs.serverapp_pull_s(k.m.objects_up, k.m.bytes_up) / server_cpu for k in classes]
        batch = [t.t_replied_s - p for t, p in zip(st.classes, pull_each)]  # a class's first pull starts
        rank = [0] * len(classes)
        replied = []
        for j in class_of:
            rank[j] += 1
            replied.append(batch[j] + pull_each[j] * rank[j])
        st.client_ids, st.class_of, st.t_replied_s = [m[0] for m in messages], class_of, replied
        return st

    def _lay_stage(self, lane: _Lane, i: int, stage: str, classes: list[ExchangeClass], server_up_bytes_per_s: float,
                   server_down_bytes_per_s: float, server_cpu: float, server_extra_s: float,
                   aggregate: bool, close: StageClose = WAIT_FOR_ALL,
                   silent: SecAggDropouts | None = None) -> StageTiming:
        """One lane's stage, class by class (``i``: the lane's index in the classes' anchors); each class's
        ``t_replied_s`` is its first member's, the clients' own are filled in by :meth:`run_stage`."""
        c = lane.costs
        t0 = lane.t_s
        ex = [Exchange(k.m, k.link, k.anchors[i], k.speed, k.members) for k in classes]
        # 1. the server pushes: the shared message body (the global model) goes to the SuperLink once
        push_s = c.local_cpu_s(max(e.m.bytes_down for e in ex)) / server_cpu
        t_pushed = t0 + push_s
        # 2. each SuperNode's pull (visible at once, objects once pushed); downloads share the server uplink
        for e in ex:
            e.t_pull = backoff_until(self._pull_time(lane, e, t0), t_pushed, c)
        self._transfer(c, ex, "down", server_up_bytes_per_s, server_cpu)
        # 3-4. the SuperExec (polling) launches a ClientApp process at "Receiving"; it pulls the message
        #      from the SuperNode (backing off if the download is not done), runs, hands the reply back;
        #      the SuperNode's reply poll, anchored at "Received", notices it
        for e in ex:
            m, s = e.m, e.speed
            t_launch = e.t_pull + self._phase(c.superexec_poll_s, lane, e.count)
            e.t_app = app_code_runs_s(c, t_launch + CLIENTAPP_START.seconds(c) / s, e.t_received,
                                      m.objects_down, m.bytes_down, s)
            e.t_done = e.t_app + m.client_extra_s + m.compute_s
            e.t_ready = e.t_done + c.local_cpu_s(m.bytes_up) / s
            # the ClientApp pushes the message (its object tree) before the objects: the SuperNode's reply
            # poll finds it then, and starts sending while the objects are still being stored
            polls = math.ceil((e.t_done - e.t_received) / c.reply_poll_s - 1e-12)
            e.t_sending = e.t_received + max(polls, 0) * c.reply_poll_s
        # 5. uploads share the server's downlink; each SuperNode pulls again at once after its reply
        self._transfer(c, ex, "up", server_down_bytes_per_s, server_cpu)
        anchors = lane.anchors
        for e in ex:
            anchors.update(dict.fromkeys(e.members, e.t_sent))
        # 6. the ServerApp polls from its push on; every reply in: aggregate
        pull_each = [c.serverapp_pull_s(e.m.objects_up, e.m.bytes_up) / server_cpu for e in ex]
        starts, taken, t_last = self._serverapp_polls(c, ex, pull_each, t_pushed, close,
                                                      self._gone_at(lane, silent, t0, t_pushed))
        pulled_end = max((t + p * e.count for t, p, e, k in zip(starts, pull_each, ex, taken) if k), default=t_pushed)
        agg_s = (c.aggregate_s(sum(e.m.bytes_up * e.count for e, k in zip(ex, taken) if k)) / server_cpu
                 if aggregate else 0.0)
        t_end = t_last + agg_s + server_extra_s
        timings = [MessageTiming(e.m.client_id, t_pushed, t + p, e.t_down, e.m.compute_s, e.t_up,
                                 e.t_down_alone, e.t_up_alone,
                                 {"supernode_poll_s": e.t_pull - t_pushed, "clientapp_start_s": e.t_app - e.t_received,
                                  "app_other_s": e.m.client_extra_s, "reply_pickup_s": e.t_sending - e.t_done})
                   for e, t, p in zip(ex, starts, pull_each)]
        pull_s = sum(p * e.count for p, e, k in zip(pull_each, ex, taken) if k)
        lane.t_s = t_end
        return StageTiming(stage, t0, t_end, {"push_s": push_s, "pull_s": pull_s, "aggregate_s": agg_s,
                                              "extra_s": server_extra_s}, timings,
                           t_sent_s=[e.t_sent for e in ex], class_late=[0.0 if k else 1.0 for k in taken],
                           # the wait after the last reply it used: a deadline's, or the dropouts' (not round-off)
                           deadline_wait_s=t_last - pulled_end if t_last - pulled_end > 1e-9 else 0.0)

    def _transfer(self, c: FlowerCosts, ex: list[Exchange], direction: str, server_bytes_per_s: float,
                  server_cpu: float = 1.0) -> None:
        """Lay every class's transfer in ``direction`` on its own link and the shared server link.

        A transfer is its message's request (a download: the pull of the message and the confirm after
        it; an upload: the send of the message), then its objects, ``object_workers`` requests at a time,
        each a round trip and its CPU before its bytes (:mod:`fedbw.netmodel.objects`). An upload's
        objects start once the ClientApp has stored them on the SuperNode: its sender, finding an object
        missing, sleeps ``content_wait_s`` at a time. Sharing the server's link stretches only the bytes
        on the wire: a flow's water-filled time beyond its time alone on its own link. (The SuperLink's
        CPU, shared by transfers in service together, is not a term: fitted from four clients whose
        transfers overlapped, its share was 0 in every calibration, and it was removed with its run.)
        """
        down = direction == "down"
        starts = []
        for e in ex:
            if down:
                starts.append(e.t_pull + e.link.rtt_s)
                continue
            t_sender = e.t_sending + e.link.rtt_s  # the message is sent; its objects follow
            waits = max(0, math.ceil((e.t_ready - t_sender) / c.content_wait_s - 1e-12))
            starts.append(t_sender + waits * c.content_wait_s)
        flows = [Flow(t, e.m.bytes_down if down else e.m.bytes_up,
                      e.link.down_bytes_per_s if down else e.link.up_bytes_per_s, e.link.rate(direction))
                 for t, e in zip(starts, ex)]
        ends = finish_times(flows, server_bytes_per_s, [e.count for e in ex])
        # a traced link's objects are read off the trace from when they start: a download's after the pull's
        # round trips (download_alone_s without objects), an upload's at its flow's start
        objects = [objects_alone_s(c, f.size_bytes, e.m.objects_down if down else e.m.objects_up, f.cap_bytes_per_s,
                                   e.link.rtt_s, e.speed, self.array_shares, f.rate,
                                   (e.t_pull + download_alone_s(c, e.link.rtt_s, 0.0, e.speed)) if down else f.start_s)
                   for e, f in zip(ex, flows)]
        for e, f, end, objects_s in zip(ex, flows, ends, objects):
            if down:
                solo = download_alone_s(c, e.link.rtt_s, objects_s, e.speed)
            else:  # the send's round trip and the content waits before the objects, then the objects
                solo = f.start_s - e.t_sending + objects_s
            if f.rate is not None:
                alone = f.rate.time_to_carry(f.start_s, f.size_bytes)
            else:
                alone = f.size_bytes / f.cap_bytes_per_s if f.cap_bytes_per_s > 0 else math.inf
            shared = solo + max(0.0, (end - f.start_s) - alone)
            if down:
                e.t_down, e.t_down_alone = shared, solo
            else:
                e.t_up, e.t_up_alone = shared, solo

    def _gone_at(self, lane: _Lane, silent: SecAggDropouts | None, t0: float, t_pushed: float) -> float:
        """When the last of ``silent`` is reported gone (-inf: none): the SuperLink stops counting a client on
        line ``patience`` heartbeats after its last one, which came an unknown phase of an interval before it
        dropped (it dropped right after its previous reply, its anchor); the stage's timeout comes first if
        it is shorter."""
        if not silent:
            return -math.inf
        dropped_at = max(lane.anchors.get(cid, t0) for cid in silent.clients)
        gone = (dropped_at + (HEARTBEAT_PATIENCE - 1) * HEARTBEAT_INTERVAL_S
                + self._phase(HEARTBEAT_INTERVAL_S, lane, len(silent.clients)))
        return gone if silent.timeout_s is None else min(gone, t_pushed + silent.timeout_s)

    def _serverapp_polls(self, c: FlowerCosts, ex: list[Exchange], pull_each: list[float], t_pushed: float,
                         close: StageClose = WAIT_FOR_ALL, hold_until: float = -math.inf,
                         ) -> tuple[list[float], list[int], float]:
        """When the ServerApp starts pulling each class's replies: it pulls right after its push, then a poll
        interval after the end of each pull, taking every reply the SuperLink knows, one after another (a
        class's members, visible together, one after another at ``pull_each`` apiece); a reply still
        uploading is pulled object by object behind its upload (:func:`pull_behind`).

        Under ``close`` it stops after the pull that brought it enough replies (keeping every reply of that
        pull), or at its first poll at or after the deadline, as Flower's ``send_and_receive`` checks the
        time before each pull. Returns each class's first pull, the members pulled per class (0: late) and
        when the ServerApp stopped pulling."""
        # classes in the order their replies reach the SuperLink (ties: the order of their first members)
        order = sorted(range(len(ex)), key=[e.t_sending for e in ex].__getitem__)
        starts = [0.0] * len(ex)
        taken = [0] * len(ex)
        end, wanted, got = close.end_s(t_pushed), close.wanted(sum(e.count for e in ex)), 0
        t, pos, n = t_pushed, 0, len(order)
        while pos < n and got < wanted and not (t >= end and t > t_pushed):
            visible, t_poll = False, t  # the replies the SuperLink knows when this poll's pull starts
            while pos < n and (e := ex[j := order[pos]]).t_sending <= t_poll:
                if e.t_sent > t:  # still uploading: pulled behind it, each object's CPU as it comes in; the
                    # first member is done when the last object is in and pulled, and not before all its CPU
                    last_in = pull_behind(t, e.t_sending, e.t_sent, e.m.objects_up, c)
                    t = max(last_in + pull_each[j] / max(1, e.m.objects_up), t + pull_each[j]) - pull_each[j]
                starts[j], taken[j] = t, e.count
                t += pull_each[j] * e.count
                got += e.count
                pos += 1
                visible = True
            if pos < n and got < wanted:
                t += (0.0 if visible else REQUEST.seconds(c)) + c.serverapp_poll_s
        for j, e in enumerate(ex):  # never pulled: its reply is on the SuperLink when its upload ends
            if not taken[j]:
                starts[j] = e.t_sent
        # replies still owed by clients that dropped: poll until they come back as errors, unless enough replies
        # closed the stage already (over-selection: the server does not wait for the others)
        while t < hold_until and not (close.enough is not None and got >= wanted):
            t += c.serverapp_poll_s + REQUEST.seconds(c)
        return starts, taken, t
