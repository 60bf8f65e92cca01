"""Measurement on both sides of every exchange.

Server side: :class:`MeasuringGrid` wraps the Grid the ServerApp gets (the legacy path has no server
mods) and sizes each message it pushes (download) and pulls (upload) per client, with timestamps.
Client side: :func:`measure_mod`, an ordinary Flower client mod, times the message inside the
ClientApp and reports the training time the client measured, in a small ConfigRecord attached to
the reply (its bytes travel and are counted in the uplink). The server's grid takes the record off
again before the app sees the reply: strategies accept exactly the records they expect (the
message-API FedAvg rejects a reply with a second MetricRecord), and an app fedbw did not write must
not see fedbw's.

Size = Flower's object tree as it goes over the wire: the sum of ``len(obj.deflate())`` over
``get_all_nested_objects(msg)``, computed inside ``no_object_id_recompute()`` (without it, large
messages take seconds to size). In deployment the SuperLink skips objects it already holds, but every
client fetches its own copy of the tree, so per-client bytes are the full tree.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

import threading

from flwr.app import ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.serverapp import Grid
from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects, no_object_id_recompute

from fedbw.fl.events import DROPPED, LATE, MESSAGE, EventLog
from fedbw.netmodel.close import StageClose

#: Reply record the client mod adds; the server reads and reports it.
MEASURE_RECORD = "fedbw.measure"
#: Context state record where the client's training code leaves its measured compute time.
COMPUTE_STATE_RECORD = "fedbw.compute"
SECAGG_CONFIGS = "secaggplus_configs"
SECAGG_STAGE_KEY = "stage"
TRAIN = "train"
#: Message type of the warm-up a measured foreign app's server sends first; measure_mod answers it.
WARMUP_TYPE = "query.fedbw_warmup"


def message_bytes(msg: Message) -> int:
    """Serialized bytes of ``msg``: Flower's object tree, every object once."""
    return message_size(msg)[0]


def message_size(msg: Message) -> tuple[int, int]:
    """(bytes, objects) of ``msg``'s object tree as Flower sends it: every object once, one request each."""
    with no_object_id_recompute():
        objects = get_all_nested_objects(msg).values()
        return sum(len(obj.deflate()) for obj in objects), len(objects)


def exchange_stage(msg: Message, train_name: str = "fit") -> str:
    """The round stage a message belongs to: SecAgg+ stage names, ``train_name`` for plain training
    ("fit" in fedbw's legacy-path apps, "train" for apps on the message API), else its type."""
    if msg.has_content():
        cfg = msg.content.config_records.get(SECAGG_CONFIGS)
        if cfg is not None and SECAGG_STAGE_KEY in cfg:
            return str(cfg[SECAGG_STAGE_KEY])
    mtype = msg.metadata.message_type
    return train_name if mtype == TRAIN else mtype


# ------------------------------------------------------------------------------------------ client


def report_compute(context: Context, compute_s: float, train_loss: float, num_examples: int) -> None:
    """Called by the training code: leave the measured numbers for :func:`measure_mod`."""
    context.state.metric_records[COMPUTE_STATE_RECORD] = MetricRecord(
        {"compute_s": float(compute_s), "train_loss": float(train_loss), "num_examples": int(num_examples)})


def partition_of(context: Context) -> int:
    try:
        return int(context.node_config["partition-id"])
    except (KeyError, TypeError, ValueError):
        return -1


def measure_mod(msg: Message, context: Context, call_next: Callable[[Message, Context], Message]) -> Message:
    """Outermost client mod: timestamps and the client's compute time, attached to every reply.

    It answers the warm-up itself (the app never sees it) with the node's partition id.
    """
    t_recv = time.perf_counter()
    if msg.metadata.message_type == WARMUP_TYPE:
        rec = ConfigRecord({"partition_id": partition_of(context), "t_recv": t_recv})
        return Message(RecordDict({MEASURE_RECORD: rec}), reply_to=msg)
    context.state.metric_records.pop(COMPUTE_STATE_RECORD, None)
    reply = call_next(msg, context)
    t_reply = time.perf_counter()
    measured = context.state.metric_records.pop(COMPUTE_STATE_RECORD, None)
    if reply.has_content() and msg.metadata.message_type.split(".")[0] in (TRAIN, "evaluate"):
        m: dict[str, Any] = {"t_recv": t_recv, "t_reply": t_reply, "t_app_s": t_reply - t_recv}
        if measured is not None:
            m.update(dict(measured))
        reply.content.config_records[MEASURE_RECORD] = ConfigRecord(m)
    return reply


# ------------------------------------------------------------------------------------------ server


class MeasuringGrid(Grid):
    """A Grid that sizes and timestamps every message through it and logs one event per reply.

    ``client_of`` maps Flower node ids to fedbw client ids; ``round_of()`` says which round the
    workflow is in (0 = outside training rounds, e.g. the hello query; those are not logged), asked
    after ``on_push(messages)`` has seen each batch. ``on_reply(round, client_id, stage)`` lets the app
    count progress. ``send_and_receive`` keeps Flower's contract and polling interval but pulls through
    this wrapper, so each reply is sized and logged as it arrives. For an app fedbw did not write
    (``foreign``) the app's whole time on a message is its compute: nothing tells training apart. Safe
    from several threads (the legacy server sends one message per client from a thread pool).
    """

    def __init__(self, inner: Grid, log: EventLog, client_of: dict[int, int], round_of: Callable[[], int],
                 on_reply: Callable[[int, int, str], None] | None = None, measure: bool = True,
                 pull_interval_s: float | None = None, on_push: Callable[[list[Message]], None] | None = None,
                 stage_train_name: str = "fit", foreign: bool = False,
                 late_of: Callable[[int, list[dict[str, Any]]], set[int]] | None = None,
                 close: StageClose | None = None, dropped_of: Callable[[int], list[int]] | None = None,
                 training_stage: str | None = None) -> None:
        self._inner = inner
        self._log = log
        self._client_of = client_of
        self._round_of = round_of
        self._on_reply = on_reply
        self._on_push = on_push
        self._measure = measure
        self._train_name = stage_train_name
        self._foreign = foreign
        # Poll as the wrapped grid would: InMemoryGrid every 0.1 s, the deployment grid every 3 s.
        self._pull_interval_s = pull_interval_s if pull_interval_s is not None else float(
            getattr(inner, "pull_interval", 3.0))
        self._sent: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        #: the round's training stage: "fit", or SecAgg+'s "collect_masked_vectors" (its clients train then,
        #: after the share exchange; default: ``stage_train_name``); where a round policy closes and where a
        #: planned dropout is gone
        self._training_stage = training_stage or stage_train_name
        #: simulate with a round policy: (round, the round's message events so far, every stage) → the
        #: clients whose training replies the virtual clock says came too late (fl.virtual_clock.VirtualClose)
        self._late_of = late_of
        #: emulate with a round policy: the training stage closes on this process's (emulated) clock
        self._close = close
        #: simulate with clients.availability: round → the plan's dropouts, whose training replies are left out
        self._dropped_of = dropped_of
        self._round_messages: dict[int, list[dict[str, Any]]] = {}

    # Delegation of the abstract interface.
    def set_run(self, run: Any) -> None:
        self._inner.set_run(run)

    @property
    def run(self) -> Any:
        return self._inner.run

    def create_message(self, *args: Any, **kwargs: Any) -> Message:
        return self._inner.create_message(*args, **kwargs)

    def get_node_ids(self) -> Iterable[int]:
        return self._inner.get_node_ids()

    def get_nodes(self) -> Iterable[Any]:
        return self._inner.get_nodes()

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        messages = list(messages)
        if self._on_push is not None:
            self._on_push(messages)
        r = self._round_of()
        # Sized before pushing: once pushed, the runtime may serialize the object tree concurrently.
        # (Message ids are not part of the serialized tree, so sizing before the grid stamps them is exact.)
        info = []
        for m in messages:
            nbytes, objects = message_size(m) if (self._measure and r > 0) else (0, 0)
            info.append({"round": r, "node_id": m.metadata.dst_node_id, "stage": exchange_stage(m, self._train_name),
                         "bytes_down": nbytes, "objects_down": objects, "pushed_with": len(messages)})
        t_sent = time.perf_counter()
        ids = list(self._inner.push_messages(messages))
        t_pushed = time.perf_counter()  # the grid returns once every message's objects are on the SuperLink
        with self._lock:
            for mid, i in zip(ids, info):
                i["t_sent"], i["t_pushed"] = t_sent, t_pushed
                self._sent[mid] = i
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        # The pull's start too: t_replied − t_pull is the ServerApp's own pull of the replies it brought
        # (a PullMessages request, each reply's objects one PullObject at a time, a confirm each), timed
        # at the receiver, which the SuperLink's side of the link cannot show.
        t_pull = time.perf_counter()
        replies = list(self._inner.pull_messages(message_ids))
        t_pulled = time.perf_counter()
        for reply in replies:
            with self._lock:
                sent = self._sent.pop(reply.metadata.reply_to_message_id, None)
            rec = None
            if not reply.has_error() and MEASURE_RECORD in reply.content.config_records:
                # sized with it (it travelled), then taken off before the app sees the reply
                size = message_size(reply) if (self._measure and sent is not None) else (0, 0)
                rec = dict(reply.content.config_records[MEASURE_RECORD])
                del reply.content[MEASURE_RECORD]
            else:
                size = None
            if sent is None or sent["round"] <= 0:
                continue
            cid = self._client_of.get(sent["node_id"], -1)
            event: dict[str, Any] = {"round": sent["round"], "client_id": cid, "stage": sent["stage"],
                                     "node_id": sent["node_id"], "bytes_down": sent["bytes_down"],
                                     "objects_down": sent["objects_down"], "pushed_with": sent["pushed_with"],
                                     "t_sent": sent["t_sent"],
                                     "t_pushed": sent["t_pushed"], "t_pull": t_pull, "t_replied": t_pulled,
                                     "pulled_with": len(replies)}
            if reply.has_error():
                event.update(bytes_up=0, objects_up=0, error=f"{reply.error.code}: {reply.error.reason}")
            else:
                if size is None:
                    size = message_size(reply) if self._measure else (0, 0)
                event["bytes_up"], event["objects_up"] = size
                if rec is not None:
                    event.update(rec)
                    if self._foreign and "compute_s" not in rec and "t_app_s" in rec:
                        event["compute_s"] = rec["t_app_s"]
            self._log.emit(MESSAGE, **event)
            if self._late_of is not None:
                with self._lock:
                    for old in [k for k in self._round_messages if k < sent["round"]]:
                        del self._round_messages[old]
                    self._round_messages.setdefault(sent["round"], []).append(event)
            if self._on_reply is not None:
                self._on_reply(sent["round"], cid, sent["stage"])
        return replies

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        """Same contract as Flower's: push, then pull until every reply is in or ``timeout`` passes. With
        ``late_of`` (simulate and a round policy) the training stage's replies are then laid on the virtual
        clock, and those of clients it calls late are left out (and logged as a ``late`` event). Under SecAgg+
        the workflow then takes a left-out client for one that dropped after the share exchange: Flower's own
        unmask path reconstructs its masks."""
        messages = list(messages)
        stage = exchange_stage(messages[0], self._train_name) if messages else ""
        training = stage == self._training_stage
        close = self._close if training else None
        enough = None
        if close is not None:  # Flower's reply timeout is the deadline; "enough" stops after the pull that got them
            if close.deadline_s is not None:
                timeout = close.deadline_s if timeout is None else min(timeout, close.deadline_s)
            enough = close.enough
        ids = set(self.push_messages(messages))
        end = time.time() + (timeout if timeout is not None else 0.0)
        out: list[Message] = []
        while timeout is None or time.time() < end:
            got = list(self.pull_messages(ids))
            out.extend(got)
            ids.difference_update(m.metadata.reply_to_message_id for m in got)
            if not ids or (enough is not None and len(out) >= enough):
                break
            time.sleep(self._pull_interval_s)
        with self._lock:
            left = [self._sent.pop(mid, None) for mid in ids]  # not pulled: forget them
        if close is not None and left:
            self._log.emit(LATE, round=self._round_of(), clients=sorted(
                self._client_of.get(i["node_id"], -1) for i in left if i is not None))
        if self._dropped_of is not None and training and out:
            out = self._without_dropped(out)
        if self._late_of is not None and training and out:
            return self._without_late(out)
        return out

    def _without_dropped(self, replies: list[Message]) -> list[Message]:
        """The replies less those of the plan's dropouts (logged as a ``dropped`` event): under simulate they
        ran to the end, but the plan has them gone before their reply, as estimate and emulate do. Under
        SecAgg+ the workflow then takes them for dropped clients: Flower's own unmask path reconstructs
        their masks."""
        assert self._dropped_of is not None
        r = self._round_of()
        gone = set(self._dropped_of(r))
        if not gone:
            return replies
        self._log.emit(DROPPED, round=r, clients=sorted(gone))
        return [m for m in replies if self._client_of.get(m.metadata.src_node_id, -1) not in gone]

    def _without_late(self, replies: list[Message]) -> list[Message]:
        r = self._round_of()
        with self._lock:  # the round's own list: the clock lays the whole round once its later stages ran
            events = self._round_messages.setdefault(r, [])
        assert self._late_of is not None
        late = self._late_of(r, events)
        if not late:
            return replies
        self._log.emit(LATE, round=r, clients=sorted(late))
        return [m for m in replies if self._client_of.get(m.metadata.src_node_id, -1) not in late]
