"""Any Flower app, unmodified, measured: wrappers around its ServerApp and ClientApp.

``fedbw simulate --app DIR`` runs the app's own components in Flower's Simulation Engine inside these
wrappers, which edit nothing in the app:

* :class:`MeasuredClientApp` runs fedbw's ``measure_mod`` outermost and then the app's own ClientApp —
  its lifespan, its mods (``secaggplus_mod`` included), its ``@app.train()``/``@app.evaluate()``
  handlers or its legacy ``client_fn``. (Flower composes mods when handlers are registered, so adding
  a mod to an app after import would do nothing; wrapping the call does.)
* :class:`MeasuredServerApp` hands the app a :class:`~fedbw.fl.measure.MeasuringGrid`, which sizes and
  stamps every message, strips fedbw's measurement record from each reply before the app sees it
  (strategies accept exactly the records they expect), and logs the same events as fedbw's own apps.
  Before the app starts, a warm-up message (answered by ``measure_mod``, never seen by the app) waits
  for every node and teaches the server which node is which partition.

Rounds: the legacy server, workflows and SecAgg+ put the round in a message's ``group_id``; the
message-API strategies leave it empty and send ``server-round`` in their config record.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from flwr.app import Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from fedbw.errors import ConfigError, RunError
from fedbw.files.versioned import EVENTS
from fedbw.fl.events import END, ERROR, NODES, ROUND_END, ROUND_START, START, EventLog
from fedbw.fl.measure import MEASURE_RECORD, WARMUP_TYPE, MeasuringGrid, measure_mod

WARMUP_TIMEOUT_S = 600.0


def load_component(ref: str, kind: str, app_dir: str | Path) -> Any:
    """One of the app's components (``kind`` = "serverapp" | "clientapp"), ``module:attr`` imported with
    ``app_dir`` on sys.path, as Flower loads it.

    Not through Flower's ``load_app``: in a deployment Flower is inside ``load_app`` (holding its import
    lock) while it imports fedbw's wrapper module, which loads the app's components — a second
    ``load_app`` would wait for that lock forever.
    """
    import importlib
    import sys

    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ConfigError(f"{app_dir}: component {kind} = {ref!r}: write it as module:attribute")
    if str(app_dir) not in sys.path:
        sys.path.insert(0, str(app_dir))
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{app_dir}: component {kind} = {ref!r} cannot be loaded: {exc}") from None
    expected = ServerApp if kind == "serverapp" else ClientApp
    if not isinstance(obj, expected):
        raise ConfigError(f"{app_dir}: component {kind} = {ref!r} is not a {expected.__name__}")
    return obj


def load_components(app_dir: str | Path) -> tuple[ServerApp, ClientApp]:
    """The app's ServerApp and ClientApp (refs from its pyproject.toml)."""
    from flwr.common.config import get_project_config

    app_dir = Path(app_dir).resolve()
    try:
        comps = get_project_config(app_dir)["tool"]["flwr"]["app"]["components"]
    except (KeyError, ValueError, FileNotFoundError) as exc:
        raise ConfigError(f"{app_dir}: not a Flower app ({exc}); pass a directory whose pyproject.toml has "
                          f"[tool.flwr.app.components]") from None
    return (load_component(comps.get("serverapp", ""), "serverapp", app_dir),
            load_component(comps.get("clientapp", ""), "clientapp", app_dir))


class MeasuredClientApp(ClientApp):
    """fedbw's ``measure_mod`` around an unmodified ClientApp (message API or legacy)."""

    def __init__(self, inner: ClientApp) -> None:
        super().__init__()
        self._inner = inner

    def __call__(self, message: Message, context: Context) -> Message:
        from flwr.client.mod.utils import make_ffn

        return make_ffn(self._inner.__call__, [measure_mod])(message, context)


def infer_round(msg: Message) -> int:
    """The round a message belongs to: a numeric ``group_id``, else a ``server-round`` in its config."""
    gid = msg.metadata.group_id
    if gid.isdigit():
        return int(gid)
    if msg.has_content():
        for rec in msg.content.config_records.values():
            v = rec.get("server-round")
            if isinstance(v, int) and not isinstance(v, bool):
                return v
    return 0


class _Rounds:
    """Turns the rounds of pushed messages into round_start / round_end events."""

    def __init__(self, log: EventLog, partition_of: dict[int, int]) -> None:
        self.log, self.partition_of = log, partition_of
        self.current = 0
        self.clients: set[int] = set()
        self.t_start = 0.0
        self._lock = threading.Lock()

    def on_push(self, messages: list[Message]) -> None:
        rounds = [infer_round(m) for m in messages]
        with self._lock:
            for m, r in zip(messages, rounds):
                if r > self.current:
                    self.finish()
                    self.current, self.clients, self.t_start = r, set(), time.perf_counter()
                if r == self.current and r > 0:
                    self.clients.add(self.partition_of.get(m.metadata.dst_node_id, -1))
            if self.current > 0:
                self.log.emit(ROUND_START, round=self.current, clients=sorted(self.clients), t=self.t_start)

    def finish(self) -> None:
        if self.current > 0:
            self.log.emit(ROUND_END, round=self.current, loss=None, accuracy=None, epsilon=None,
                          wall_time_s=time.perf_counter() - self.t_start)
            self.current = 0


class MeasuredServerApp(ServerApp):
    """An unmodified ServerApp given a measuring Grid; warm-up first, the event log's start and end around it."""

    def __init__(self, inner: ServerApp, events_path: Path, num_nodes: int) -> None:
        super().__init__()
        self._inner, self._events_path, self._num_nodes = inner, Path(events_path), num_nodes

    def __call__(self, grid: Grid, context: Context) -> None:
        log = EventLog(self._events_path)
        try:
            log.emit(START, **EVENTS.stamp(), clients=self._num_nodes, t=time.perf_counter(),
                     app="foreign")
            partition_of = warm_up(grid, self._num_nodes)
            log.emit(NODES, node_of={str(p): n for n, p in sorted(partition_of.items(), key=lambda x: x[1])})
            rounds = _Rounds(log, partition_of)
            measured = MeasuringGrid(grid, log, partition_of, round_of=lambda: rounds.current,
                                     on_push=rounds.on_push, stage_train_name="train", foreign=True)
            self._inner(measured, context)
            rounds.finish()
            log.emit(END, t=time.perf_counter(), rounds=None, stopped_early=None)
        except BaseException as exc:
            log.emit(ERROR, message=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            log.close()


def warm_up(grid: Grid, num_nodes: int, timeout_s: float = WARMUP_TIMEOUT_S) -> dict[int, int]:
    """Wait for every node, send each a warm-up (answered by ``measure_mod``) and learn node → partition.

    Why: the Simulation Engine starts the ServerApp before Ray is up; without this, round 1 would carry
    the engine's start-up (10–16 s on 2 cores) as if it were the app's.
    """
    deadline = time.monotonic() + timeout_s
    while len(nodes := list(grid.get_node_ids())) < num_nodes:
        if time.monotonic() > deadline:
            raise RunError(f"only {len(nodes)} of {num_nodes} nodes came up within {timeout_s:.0f} s")
        time.sleep(0.1)
    msgs = [Message(RecordDict(), dst_node_id=n, message_type=WARMUP_TYPE) for n in nodes]
    out: dict[int, int] = {}
    for reply in grid.send_and_receive(msgs, timeout=max(1.0, deadline - time.monotonic())):
        if reply.has_error():
            raise RunError(f"node {reply.metadata.src_node_id} failed the warm-up: {reply.error.reason}")
        out[reply.metadata.src_node_id] = int(reply.content.config_records[MEASURE_RECORD]["partition_id"])
    return out


def run_in_simulation(app_dir: str | Path, num_nodes: int, events_path: Path, overrides: dict[str, Any],
                      backend_config: dict[str, Any]) -> None:
    """Run the app (its run config: pyproject defaults + ``overrides``) in Flower's Simulation Engine,
    both components wrapped; as ``flwr-simulation`` itself calls it, so both apps see the fused config."""
    from flwr.common.config import get_fused_config_from_dir
    from flwr.common.constant import RUN_ID_NUM_BYTES, SUPERLINK_NODE_ID, TASK_ID_NUM_BYTES
    from flwr.server.superlink.linkstate.utils import generate_rand_int_from_bytes
    from flwr.simulation.run_simulation import _run_simulation
    from flwr.supercore.constant import NOOP_FEDERATION_ID
    from flwr.supercore.run import Run
    from flwr.supercore.task_identity import TaskIdentity
    from flwr.supercore.telemetry import EventType

    app_dir = Path(app_dir).resolve()
    server, client = load_components(app_dir)
    try:
        fused = get_fused_config_from_dir(app_dir, dict(overrides))
    except ValueError as exc:
        raise ConfigError(f"--run-config: {exc}; use keys of the app's [tool.flwr.app.config]") from None
    run = Run.create_empty(run_id=generate_rand_int_from_bytes(RUN_ID_NUM_BYTES))
    run.primary_task_id = generate_rand_int_from_bytes(TASK_ID_NUM_BYTES)
    run.federation_id = NOOP_FEDERATION_ID
    run.override_config = dict(overrides)
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, run.run_id, SUPERLINK_NODE_ID
    ctx = Context(run_id=run.run_id, node_id=0, node_config={}, state=RecordDict(), run_config=fused)
    _run_simulation(num_supernodes=num_nodes, exit_event=EventType.PYTHON_API_RUN_SIMULATION_LEAVE,
                    client_app=MeasuredClientApp(client), server_app=MeasuredServerApp(server, events_path, num_nodes),
                    backend_config=backend_config, server_app_context=ctx, app_dir=str(app_dir), run=run,
                    is_app=True)
