"""One federated round as a timeline: per client, per stage, with the server's barriers.

Each stage is a barrier: the server waits for every sampled client before starting the next, so the
slowest client of each stage decides it (stragglers cost everyone). Within a stage a client downloads,
computes (if the stage trains) and uploads. Two ways to lay a stage out:

* **links only** (``framework = "none"``): each one-way message costs latency + bytes/rate on the
  client's link — and, with a server link, the clients' flows share it max-min fairly;
* **a Flower deployment** (a :class:`~fedbw.netmodel.flower.DeploymentClock`): the same transfers plus
  Flower's own costs — poll waits, a ClientApp process per message, serialisation, one request per
  object, the ServerApp's poll, aggregation — on one clock that carries every SuperNode's poll grid
  from stage to stage and round to round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping, NamedTuple, Sequence

from fedbw.flower_protocol import FRAMEWORK_PARTS
from fedbw.netmodel.close import SecAggDropouts, WAIT_FOR_ALL, StageClose, close_links_only
from fedbw.netmodel.flower import DeploymentClock
from fedbw.netmodel.stage import StageMessage, StageTiming
from fedbw.netmodel.payload import MessageSizes
from fedbw.netmodel.sharing import Flow, finish_times
from fedbw.netmodel.spread import INTERVAL, quantiles
from fedbw.netmodel.transfer import ClientLink, mbps_to_bytes_per_s, transfer_time_s

#: Communication above this share of the round means the workload is bandwidth-bound.
BANDWIDTH_BOUND_FRACTION = 0.30


@dataclass(frozen=True)
class ServerLink:
    """The server's own link, shared by every client's flows (payload Mbps; inf = not a limit)."""

    up_payload_mbps: float = math.inf  #: server → clients: the downloads
    down_payload_mbps: float = math.inf  #: clients → server: the uploads

    @property
    def limits(self) -> bool:
        return not (math.isinf(self.up_payload_mbps) and math.isinf(self.down_payload_mbps))


UNLIMITED = ServerLink()


#: The parts of a row without Flower's costs (read-only: every such row shares it).
NO_PARTS: Mapping[str, float] = MappingProxyType({})


class ClientStageTiming(NamedTuple):
    """One client's share of one stage (a named tuple: a round holds one per client per stage, and at
    100,000 clients their construction is much of the round's cost)."""

    client_id: int
    stage: str
    bytes_down: float
    bytes_up: float
    t_down_s: float
    t_compute_s: float
    t_up_s: float
    t_framework_s: float = 0.0  #: Flower's own time (polls, process start, app work besides training)
    #: t_framework_s split (FRAMEWORK_PARTS) but for the ServerApp's poll: the parts the client's class of
    #: identical exchanges shares (one mapping for them all, not one per client)
    class_parts: Mapping[str, float] = NO_PARTS
    server_link_s: float = 0.0  #: of t_down_s + t_up_s, waiting for the shared server link
    serverapp_poll_s: float = 0.0  #: of t_framework_s, the wait for the ServerApp's poll (the client's own)
    #: the share of the clock's lanes in which the server closed the stage before it had this reply (0 or 1
    #: without Flower's costs): a late client's update is not used, its bytes and compute are spent
    late: float = 0.0

    @property
    def parts(self) -> dict[str, float]:
        """t_framework_s split (FRAMEWORK_PARTS); empty without Flower's costs (links only)."""
        if not self.class_parts:
            return {}
        return {**self.class_parts, "serverapp_poll_s": self.serverapp_poll_s}

    @property
    def t_total_s(self) -> float:
        return self.t_down_s + self.t_compute_s + self.t_up_s + self.t_framework_s

    @property
    def t_comm_s(self) -> float:
        return self.t_down_s + self.t_up_s


@dataclass
class RoundTimeline:
    stages: list[str]
    timings: list[ClientStageTiming] = field(default_factory=list)
    #: a stage's duration when it is more than its slowest client (server push, pulls, aggregation)
    stage_spans_s: dict[str, float] = field(default_factory=dict)
    server_s: dict[str, float] = field(default_factory=dict)  #: server work summed over the stages
    #: the round in each of the clock's lanes (phases × constants' draws; empty without Flower's costs)
    lane_round_s: list[float] = field(default_factory=list)
    #: per stage closed at a deadline: how long the server waited after its last counted reply
    deadline_wait_s: dict[str, float] = field(default_factory=dict)

    @property
    def round_quantiles_s(self) -> tuple[float, float, float] | None:
        """The round's 10th, 50th and 90th percentile over Flower's unknown poll phases and the constants'
        intervals (:mod:`fedbw.netmodel.spread`); None for a links-only round, which has no spread."""
        if not self.lane_round_s:
            return None
        low, mid, high = quantiles(self.lane_round_s, INTERVAL)
        return low, mid, high

    def _barriers(self) -> dict[str, ClientStageTiming]:
        """Each stage's barrier-holder (the first of its slowest counted clients: a late reply holds no
        barrier), found in one pass over the timings and kept until more timings arrive: every round figure
        reads it, at any scale."""
        cached = self.__dict__.get("_barrier_cache")
        if cached is not None and cached[0] == len(self.timings):
            return cached[1]
        best: dict[str, ClientStageTiming] = {}
        slowest: dict[str, float] = {}
        for t in self.timings:
            if t.late > 0.5:
                continue
            total = t.t_down_s + t.t_compute_s + t.t_up_s + t.t_framework_s
            if t.stage not in slowest or total > slowest[t.stage]:
                best[t.stage], slowest[t.stage] = t, total
        self.__dict__["_barrier_cache"] = (len(self.timings), best)
        return best

    def stage_time_s(self, stage: str) -> float:
        holder = self._barriers().get(stage)
        return max(holder.t_total_s if holder is not None else 0.0, self.stage_spans_s.get(stage, 0.0))

    def critical(self, stage: str) -> ClientStageTiming | None:
        """The client that holds the barrier of ``stage``."""
        return self._barriers().get(stage)

    def _critical_rows(self) -> list[ClientStageTiming]:
        return [c for s in self.stages if (c := self.critical(s)) is not None]

    @property
    def round_time_s(self) -> float:
        return sum(self.stage_time_s(s) for s in self.stages)

    @property
    def comm_time_s(self) -> float:
        """Communication on the critical path: the barrier-holders' download + upload time."""
        return sum(c.t_comm_s for c in self._critical_rows())

    @property
    def compute_time_s(self) -> float:
        return sum(c.t_compute_s for c in self._critical_rows())

    @property
    def framework_time_s(self) -> float:
        """The rest of the round: Flower's own time on the critical path and the server's work (each
        stage's span beyond its barrier-holder), without the server's wait for a deadline."""
        total = 0.0
        for s in self.stages:
            if (c := self.critical(s)) is not None:
                total += c.t_framework_s + (self.stage_time_s(s) - c.t_total_s) - self.deadline_wait_s.get(s, 0.0)
        return total

    @property
    def waited_for_deadline_s(self) -> float:
        """The time the server spent waiting for a deadline after its last counted reply."""
        return sum(self.deadline_wait_s.values())

    @property
    def late_ids(self) -> set[int]:
        """Clients whose reply missed the close of a stage (late in most of the clock's lanes)."""
        return {t.client_id for t in self.timings if t.late > 0.5}

    @property
    def late_clients(self) -> int:
        """Clients whose reply missed the close of a stage (counted once each)."""
        return len(self.late_ids)

    @property
    def wasted_bytes_up(self) -> float:
        """Uplink bytes of replies the server did not use."""
        return sum(t.bytes_up for t in self.timings if t.late > 0.5)

    @property
    def framework_parts_s(self) -> dict[str, float]:
        """The critical path's framework time by part, and the server's work."""
        parts = dict.fromkeys(FRAMEWORK_PARTS, 0.0)
        for c in self._critical_rows():
            for k, v in c.parts.items():
                parts[k] = parts.get(k, 0.0) + v
        return {**parts, **{f"server_{k}": v for k, v in self.server_s.items()}}

    @property
    def server_link_s(self) -> float:
        """Of the critical path's communication, the time spent waiting for the shared server link."""
        return sum(c.server_link_s for c in self._critical_rows())

    @property
    def comm_fraction(self) -> float:
        total = self.round_time_s
        return self.comm_time_s / total if total > 0 else 0.0

    @property
    def bandwidth_bound(self) -> bool:
        return self.comm_fraction > BANDWIDTH_BOUND_FRACTION

    def client_rows(self, client_id: int) -> list[ClientStageTiming]:
        return [t for t in self.timings if t.client_id == client_id]


def round_timeline(clients: Sequence[tuple[int, ClientLink, float]],
                   exchanges_for: Callable[[int], Sequence[MessageSizes]] | list[MessageSizes], *,
                   deployment: DeploymentClock | None = None, server: ServerLink = UNLIMITED,
                   client_cpu: Mapping[int, float] | None = None, server_cpu: float = 1.0,
                   server_extra_s: Callable[[str, int, int], float] | None = None,
                   app_setup_s: float = 0.0, close: StageClose = WAIT_FOR_ALL,
                   dropped: SecAggDropouts | None = None) -> RoundTimeline:
    """Lay out one round.

    ``clients`` holds (client_id, link, compute_s) for each sampled client; ``exchanges_for(cid)``
    returns that client's stage messages (sizes may differ per client, e.g. measured bytes), or
    ``exchanges_for`` is one list of messages for every client (estimate's). With a
    ``deployment`` clock the round includes Flower's costs and advances that clock; ``server`` is the
    shared server link; ``server_extra_s(stage, clients, lost)`` adds server work after a stage (SecAgg+
    unmasking of that many clients' vectors, ``lost`` more late at an earlier stage); ``close`` ends each
    stage that trains at a deadline or once enough replies are in (:mod:`fedbw.netmodel.close`; the other
    stages wait for every client). A client late at a stage that closed takes no part in the round's later
    stages: the server has stopped waiting for it (SecAgg+'s unmask stage goes to the clients whose masked
    vectors it holds, and reconstructs what the late ones owed, as for a dropout).
    ``dropped``: SecAgg+ clients gone after the share exchange (their exchanges end there); the stage they
    miss waits for Flower to report them gone (Flower's costs only).
    """
    if isinstance(exchanges_for, list):  # one list for every client: shared, not copied
        rows = [(cid, link, compute_s, exchanges_for) for cid, link, compute_s in clients]
    else:
        rows = [(cid, link, compute_s, ex if isinstance(ex := exchanges_for(cid), list) else list(ex))
                for cid, link, compute_s in clients]
    if not rows:
        return RoundTimeline([])
    # every stage any client takes part in, in order (a dropped client's list ends early)
    stages = list(dict.fromkeys(e.stage for ex in {id(r[3]): r[3] for r in rows}.values() for e in ex))
    if deployment is not None:
        return _deployment_round(rows, stages, deployment, server, client_cpu, server_cpu, server_extra_s,
                                 app_setup_s, close, dropped)
    if dropped is not None:
        raise ValueError("SecAgg+ dropouts need Flower's deployment clock (what they cost is how long it waits)")
    if server.limits:
        return _closed(_shared_links_round(rows, stages, server), rows, close)
    timeline = RoundTimeline(stages)
    for cid, link, compute_s, exchanges in rows:
        for ex in exchanges:
            timeline.timings.append(ClientStageTiming(
                client_id=cid, stage=ex.stage, bytes_down=ex.bytes_down, bytes_up=ex.bytes_up,
                t_down_s=transfer_time_s(ex.bytes_down, link.down_payload_mbps, link.one_way_s),
                t_compute_s=stage_compute_s(ex, compute_s),
                t_up_s=transfer_time_s(ex.bytes_up, link.up_payload_mbps, link.one_way_s)))
    return _closed(timeline, rows, close)


def _closed(timeline: RoundTimeline, rows: Sequence[tuple[int, ClientLink, float, list[MessageSizes]]],
            close: StageClose) -> RoundTimeline:
    """A links-only round with ``close`` applied to each stage that trains: a reply counts the moment it
    arrives (no polls), the stage ends at the closing reply or the deadline."""
    if not close.closes_early:
        return timeline
    training = {ex.stage for _, _, _, exchanges in rows for ex in exchanges if ex.computes}
    lost: set[int] = set()
    for stage in timeline.stages:
        if lost:  # late at an earlier stage: not in this one (its flows were laid with the others')
            timeline.timings = [t for t in timeline.timings if t.stage != stage or t.client_id not in lost]
        if stage not in training:
            continue
        idx = [i for i, t in enumerate(timeline.timings) if t.stage == stage]
        finishes = [timeline.timings[i].t_total_s for i in idx]
        t_close, late = close_links_only(0.0, finishes, close)
        for i, is_late in zip(idx, late):
            timeline.timings[i] = timeline.timings[i]._replace(late=1.0 if is_late else 0.0)
        timeline.stage_spans_s[stage] = t_close
        lost.update(timeline.timings[i].client_id for i, is_late in zip(idx, late) if is_late)
        counted = [f for f, is_late in zip(finishes, late) if not is_late]
        if any(late):
            timeline.deadline_wait_s[stage] = t_close - max(counted, default=0.0)
    return timeline


def stage_compute_s(ex: MessageSizes, client_compute_s: float) -> float:
    """A stage's training time: its own measurement, else the client's, in stages that train."""
    if not ex.computes:
        return 0.0
    return ex.compute_s if ex.compute_s is not None else client_compute_s


def _by_stage(rows: Sequence[tuple[int, ClientLink, float, list[MessageSizes]]], stage: str,
              ) -> list[tuple[int, ClientLink, float, MessageSizes]]:
    """This stage's (client, link, compute, message) rows, the compute that of this stage."""
    out = []
    for cid, link, compute_s, exchanges in rows:
        for ex in exchanges:
            if ex.stage == stage:  # stage_compute_s, inlined: this runs once per client per stage
                out.append((cid, link, (compute_s if ex.compute_s is None else ex.compute_s) if ex.computes else 0.0,
                            ex))
    return out


def _shared_links_round(rows: Sequence[tuple[int, ClientLink, float, list[MessageSizes]]], stages: list[str],
                        server: ServerLink) -> RoundTimeline:
    """Links only, every stage's downloads starting together and sharing the server's uplink; each
    upload starts when its client is done training and shares the server's downlink."""
    timeline = RoundTimeline(stages)
    up_cap, down_cap = mbps_to_bytes_per_s(server.down_payload_mbps), mbps_to_bytes_per_s(server.up_payload_mbps)
    for stage in stages:
        items = _by_stage(rows, stage)
        downs = finish_times([Flow(0.0, ex.bytes_down, link.down_bytes_per_s) for _, link, _, ex in items], down_cap)
        compute = [c for _, _, c, _ in items]
        ups_start = [d + link.one_way_s + c for d, (_, link, _, _), c in zip(downs, items, compute)]
        ups = finish_times([Flow(t, ex.bytes_up, link.up_bytes_per_s)
                            for t, (_, link, _, ex) in zip(ups_start, items)], up_cap)
        for (cid, link, _, ex), d, c, start, u in zip(items, downs, compute, ups_start, ups):
            t_down, t_up = link.one_way_s + d, link.one_way_s + (u - start)
            alone = (transfer_time_s(ex.bytes_down, link.down_payload_mbps, link.one_way_s)
                     + transfer_time_s(ex.bytes_up, link.up_payload_mbps, link.one_way_s))
            timeline.timings.append(ClientStageTiming(cid, stage, ex.bytes_down, ex.bytes_up, t_down, c, t_up,
                                                      server_link_s=max(0.0, t_down + t_up - alone)))
    return timeline


def _deployment_round(rows: Sequence[tuple[int, ClientLink, float, list[MessageSizes]]], stages: list[str],
                      clock: DeploymentClock, server: ServerLink, client_cpu: Mapping[int, float] | None,
                      server_cpu: float, server_extra_s: Callable[[str, int, int], float] | None,
                      app_setup_s: float, close: StageClose = WAIT_FOR_ALL,
                      dropped: SecAggDropouts | None = None) -> RoundTimeline:
    timeline = RoundTimeline(stages)
    server_totals: dict[str, float] = {}
    lost: set[int] = set()  # late at a stage that closed: out of the round's later stages
    for stage in stages:
        items = _by_stage(rows, stage)
        if lost:
            items = [it for it in items if it[0] not in lost]
        tails: dict[tuple[int, float], tuple[float, float, int, int, float, float]] = {}
        messages = []
        new = tuple.__new__  # StageMessage from its fields in order (one per client: keep it cheap)
        last: tuple[object, float] | None = None
        tail = ()
        for cid, _, compute_s, ex in items:
            if last is None or ex is not last[0] or compute_s != last[1]:  # most clients repeat their neighbour's
                last = (ex, compute_s)
                tail = tails.get((id(ex), compute_s))
                if tail is None:
                    tail = tails[(id(ex), compute_s)] = (ex.bytes_down, ex.bytes_up, ex.objects_down, ex.objects_up,
                                                         compute_s,
                                                         ex.client_extra_s + (app_setup_s if ex.computes else 0.0))
            messages.append(new(StageMessage, (cid, *tail)))
        trains = any(ex.computes for _, _, _, ex in items)
        st = clock.run_stage(stage, messages, {cid: link for cid, link, _, _ in items},
                             server_up_bytes_per_s=mbps_to_bytes_per_s(server.up_payload_mbps),
                             server_down_bytes_per_s=mbps_to_bytes_per_s(server.down_payload_mbps),
                             client_cpu=client_cpu, server_cpu=server_cpu,
                             server_extra_s=server_extra_s(stage, len(items), len(lost)) if server_extra_s else 0.0,
                             aggregate=trains, close=close if trains else WAIT_FOR_ALL,
                             silent=dropped if dropped is not None and stage == dropped.stage else None)
        rows_now = _stage_timings(stage, st, items)
        timeline.timings += rows_now
        lost.update(t.client_id for t in rows_now if t.late > 0.5)
        timeline.stage_spans_s[stage] = st.t_end_s - st.t_start_s
        if st.deadline_wait_s > 0:
            timeline.deadline_wait_s[stage] = st.deadline_wait_s
        if st.lane_spans_s:  # a stage nobody takes part in has no lanes
            lanes = timeline.lane_round_s
            timeline.lane_round_s = [a + b for a, b in zip(lanes, st.lane_spans_s)] if lanes else list(st.lane_spans_s)
        for k, v in st.server_s.items():
            server_totals[k] = server_totals.get(k, 0.0) + v
    timeline.server_s = server_totals
    return timeline


def _stage_timings(stage: str, st: StageTiming, items: Sequence[tuple[int, ClientLink, float, MessageSizes]],
                   ) -> list[ClientStageTiming]:
    """Each client's row of a stage laid out by the clock: its class's times, its own ServerApp poll."""
    shared = []  # per class: the parts every member shares, their sum so far, and the class's fixed fields
    for k, t_sent in zip(st.classes, st.t_sent_s):
        framework = 0.0
        for v in k.parts.values():
            framework += v
        shared.append((k.parts, framework, t_sent, k.t_down_s, k.t_compute_s, k.t_up_s,
                       max(0.0, k.t_down_s + k.t_up_s - k.t_down_alone_s - k.t_up_alone_s)))
    out = []
    new = tuple.__new__  # the named tuple built from its fields in order, without its argument handling
    late = st.class_late or [0.0] * len(st.classes)
    for (cid, _, _, ex), j, t_replied in zip(items, st.class_of, st.t_replied_s):
        parts, framework, t_sent, t_down, t_compute, t_up, waited = shared[j]
        poll = t_replied - t_sent
        out.append(new(ClientStageTiming, (cid, stage, ex.bytes_down, ex.bytes_up, t_down, t_compute, t_up,
                                           framework + poll, parts, waited, poll, late[j])))
    return out
