"""An in-process Flower ``Grid`` that runs real ClientApps without Ray or sockets.

Why: SecAgg+, DP and codecs are message protocols; testing them through the Simulation Engine costs
≈ 20 s of Ray start-up per test. This grid drives Flower's own server workflows (``DefaultWorkflow``,
``SecAggPlusWorkflow``) against real ``ClientApp``s in the same process, and every message crosses a
real Flower serialization round trip (deflate → bytes → inflate), so the server only ever sees what
would have been on the wire, and the bytes it counts are the bytes Flower would send.

It is a test and measurement harness: one process, sequential clients, no timing model. Where Flower
would turn a ClientApp exception into an error reply, here it propagates, so tests fail loudly; a
dropped node (``drop``) never replies, as after a timeout.
"""

from __future__ import annotations

import contextlib
import logging
import random
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from flwr.app import Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.common.logger import FLOWER_LOGGER
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key
from flwr.serverapp.grid import Grid
from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects, no_object_id_recompute
from flwr.supercore.inflatable.inflatable_utils import inflate_object_from_contents
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity


def message_bytes(msg: Message) -> int:
    """Bytes of a message's serialized object tree (how Flower moves it: one object per node)."""
    with no_object_id_recompute():
        return sum(len(obj.deflate()) for obj in get_all_nested_objects(msg).values())


def wire_roundtrip(msg: Message) -> tuple[Message, int]:
    """Serialize and rebuild a message, as the SuperLink would; returns (copy, bytes)."""
    with no_object_id_recompute():
        objects = get_all_nested_objects(msg)
        contents = {oid: obj.deflate() for oid, obj in objects.items()}
    size = sum(len(c) for c in contents.values())
    copy = inflate_object_from_contents(msg.object_id, contents)
    # Metadata fields set after construction travel beside the object tree in Flower; carry them over.
    for key in ("_message_id", "_reply_to_message_id", "_src_node_id", "_dst_node_id"):
        if key in msg.metadata.__dict__:
            copy.metadata.__dict__[key] = msg.metadata.__dict__[key]
    return copy, size


@contextlib.contextmanager
def task_identity(run_id: int, node_id: int, task_id: int = 1) -> Iterator[None]:
    """Set Flower's process-global task identity (Message() needs it) and restore it afterwards."""
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = run_id, node_id, task_id
    try:
        yield
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


@dataclass
class Exchange:
    """One server→client→server message pair as measured on the loopback wire."""

    node_id: int
    group_id: str
    stage: str  #: SecAgg+ stage, else the message type ("train", "evaluate", ...)
    bytes_down: int
    bytes_up: int | None  #: None when the client dropped out before replying


def stage_of(msg: Message) -> str:
    cfg = msg.content.config_records.get(RECORD_KEY_CONFIGS)
    if cfg is not None and Key.STAGE in cfg:
        return str(cfg[Key.STAGE])
    return msg.metadata.message_type


#: drop(node_id, round, stage) -> True makes that node silent for that message (a dropout).
DropFn = Callable[[int, str, str], bool]


class LoopbackGrid(Grid):
    """A Grid whose nodes are in-process ClientApps, each with its own persistent Context."""

    #: Replies are ready as soon as a push returns; a wrapper that polls (fedbw's MeasuringGrid) waits
    #: this long between pulls for a silent node, not the deployment grid's 3 s.
    pull_interval = 0.01

    def __init__(self, client_app: ClientApp, num_nodes: int, *, run_id: int = 1,
                 node_config: Callable[[int], dict[str, Any]] | None = None, drop: DropFn | None = None,
                 on_reply: Callable[[Message], None] | None = None) -> None:
        self.client_app = client_app
        self._run = Run.create_empty(run_id)
        # Flower's node IDs are random 64-bit integers; their size shows in SecAgg+ control messages.
        rng = random.Random(run_id)
        self.node_ids = [rng.randrange(2**62, 2**63) for _ in range(num_nodes)]
        self.partition = {nid: i for i, nid in enumerate(self.node_ids)}
        self.contexts = {
            nid: Context(run_id=run_id, node_id=nid,
                         node_config=(node_config(i) if node_config else {"partition-id": i, "num-partitions": num_nodes}),
                         state=RecordDict(), run_config={})
            for i, nid in enumerate(self.node_ids)}
        self.drop = drop
        self.on_reply = on_reply
        self.exchanges: list[Exchange] = []
        self._pending: dict[str, Message] = {}

    # -- Grid API
    def set_run(self, run: Run) -> None:
        self._run = run

    @property
    def run(self) -> Run:
        return self._run

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int, group_id: str,
                       ttl: float | None = None) -> Message:
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self.node_ids)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        """Deliver each message now (clients run one after another); replies wait for pull_messages."""
        ids = []
        for msg in messages:
            msg_id = str(uuid.uuid4())
            msg.metadata.__dict__["_message_id"] = msg_id
            ids.append(msg_id)
            reply = self._deliver(msg)
            if reply is not None:
                self._pending[msg_id] = reply
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        return [self._pending.pop(i) for i in message_ids if i in self._pending]

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        # A silent (dropped) node simply never replies; with timeout=None Flower would wait forever,
        # here the round goes on without it, as it would after a timeout.
        return self.pull_messages(self.push_messages(messages))

    def _deliver(self, msg: Message) -> Message | None:
        nid = msg.metadata.dst_node_id
        stage = stage_of(msg)
        with task_identity(self._run.run_id, SUPERLINK_NODE_ID):
            at_client, down = wire_roundtrip(msg)
        if self.drop is not None and self.drop(nid, msg.metadata.group_id, stage):
            self.exchanges.append(Exchange(nid, msg.metadata.group_id, stage, down, None))
            return None
        with task_identity(self._run.run_id, nid):
            reply = self.client_app(at_client, self.contexts[nid])
            at_server, up = wire_roundtrip(reply)
        self.exchanges.append(Exchange(nid, msg.metadata.group_id, stage, down, up))
        if self.on_reply is not None:
            self.on_reply(at_server)
        return at_server


def run_legacy(grid: LoopbackGrid, strategy: Any, num_rounds: int, fit_workflow: Any = None) -> Any:
    """Run Flower's DefaultWorkflow (legacy path) on the loopback grid; returns the LegacyContext. Flower's
    log lines below ERROR are held back meanwhile: these rounds are measurements, not the user's run."""
    from flwr.server import LegacyContext, ServerConfig
    from flwr.server.workflow import DefaultWorkflow

    with _flower_quiet(), task_identity(grid.run.run_id, SUPERLINK_NODE_ID):
        context = LegacyContext(
            context=Context(run_id=grid.run.run_id, node_id=SUPERLINK_NODE_ID, node_config={},
                            state=RecordDict(), run_config={}),
            config=ServerConfig(num_rounds=num_rounds), strategy=strategy)
        workflow = DefaultWorkflow(fit_workflow=fit_workflow) if fit_workflow is not None else DefaultWorkflow()
        workflow(grid, context)
    return context


@contextlib.contextmanager
def _flower_quiet() -> Iterator[None]:
    level = FLOWER_LOGGER.level
    FLOWER_LOGGER.setLevel(logging.ERROR)
    try:
        yield
    finally:
        FLOWER_LOGGER.setLevel(level)


__all__ = ["Exchange", "LoopbackGrid", "message_bytes", "run_legacy", "stage_of",
           "task_identity", "wire_roundtrip"]
