"""fedbw's ServerApp: Flower's legacy ``DefaultWorkflow`` (so SecAgg+ can replace its fit step).

Before round 1 a "hello" query (``get_properties``) asks every SuperNode for its partition id, so the
server knows node id ↔ fedbw client id; it is not part of any round and not logged as traffic. Every
training exchange then goes through a :class:`~fedbw.fl.measure.MeasuringGrid` that logs one event
per client reply; the strategy logs each round's start and end (with evaluation).
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable

import numpy as np
from flwr.app import Context, Message
from flwr.common import GetPropertiesIns, ndarrays_to_parameters
from flwr.compat.common.recorddict_compat import getpropertiesins_to_recorddict, recorddict_to_getpropertiesres
from flwr.server import LegacyContext, ServerConfig
from flwr.server.strategy import Strategy
from flwr.server.workflow import DefaultWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
from flwr.server.workflow.constant import Key as WorkflowKey
from flwr.server.workflow.default_workflows import default_fit_workflow
from flwr.serverapp import Grid, ServerApp

from fedbw.errors import RunError
from fedbw.files.versioned import EVENTS
from fedbw.fl.events import END, ERROR, HALTED, NODES, START, EventLog
from fedbw.fl import node_map
from fedbw.fl.measure import MeasuringGrid
from fedbw.fl.settings import AppSettings, settings_for
from fedbw.fl.strategy import NODE_WAIT_S, BudgetExhausted, PlanFedAvg, RoundState, centralized_evaluator
from fedbw.fl.wiring import fit_workflow, wrap_strategy
from fedbw.netmodel.close import StageClose

HELLO_TYPE = "get_properties"
#: how long a client that came back has to answer the hello (its SuperNode starts a ClientApp for it)
HELLO_TIMEOUT_S = 120.0

app = ServerApp()


def initial_parameters(settings: AppSettings):
    """The seeded initial model (real mode) or seeded noise of its shapes (synthetic).

    Not zeros: Flower's object tree stores identical 5 MiB chunks once, so constant arrays would
    travel in fewer bytes than any trained model does.
    """
    name = settings.plan.model.name
    if settings.synthetic:
        from fedbw.fl.train import parameter_shapes

        rng = np.random.default_rng([settings.config.seed, 11])
        arrays = [rng.standard_normal(shape, dtype=np.float32) * np.float32(0.01) for shape in parameter_shapes(name)]
    else:
        from fedbw.fl.train import get_parameters, seeded_model

        arrays = get_parameters(seeded_model(name, settings.config.seed, "cpu"))
    return ndarrays_to_parameters(arrays)


def discover_clients(grid: Grid, total: int, timeout_s: float = NODE_WAIT_S) -> dict[int, int]:
    """fedbw client id → Flower node id: from the Simulation Engine's own registration when it made the nodes
    (:mod:`fedbw.fl.node_map`), else asking each node for its ``partition-id``."""
    deadline = time.monotonic() + timeout_s
    while len(node_ids := list(grid.get_node_ids())) < total:
        if time.monotonic() > deadline:
            raise RunError(f"only {len(node_ids)} of {total} SuperNodes connected within {timeout_s:.0f} s")
        time.sleep(0.5)
    known = node_map.client_nodes(timeout_s=max(0.0, deadline - time.monotonic()))
    if known is not None and sorted(known) == list(range(total)) and set(known.values()) <= set(node_ids):
        return known
    mapping = _hello(grid, node_ids, timeout_s)
    missing = sorted(set(range(total)) - set(mapping))
    if missing:
        raise RunError(f"no SuperNode answered for client id(s) {missing[:10]}; check their partition-id")
    return mapping


def _hello(grid: Grid, node_ids: list[int], timeout_s: float, strict: bool = True) -> dict[int, int]:
    """client id (the node's ``partition-id``) → node id, for every node in ``node_ids`` that answers; an error
    reply is a RunError when ``strict``, else that node is left out."""
    content = getpropertiesins_to_recorddict(GetPropertiesIns({}))
    msgs = [Message(content=content, dst_node_id=nid, message_type=HELLO_TYPE, group_id="0") for nid in node_ids]
    mapping: dict[int, int] = {}
    for r in grid.send_and_receive(msgs, timeout=timeout_s):
        if r.has_error():
            if not strict:
                continue
            raise RunError(f"node {r.metadata.src_node_id} failed the hello query: {r.error.reason}")
        props = recorddict_to_getpropertiesres(r.content).properties
        mapping[int(props["partition-id"])] = r.metadata.src_node_id
    return mapping


class ComeBack:
    """Finds the new node of a client that came back: under emulate a client that went off line mid-round has
    its SuperNode stopped, and when the plan samples it again a fresh one runs, registered under a new node id
    (Flower gives a reconnecting SuperNode a new one). Nodes seen before (the stopped one stays listed until its
    heartbeat lapses) are never asked again."""

    def __init__(self, grid: Grid, node_of: dict[int, int], log: EventLog) -> None:
        self.grid, self.log = grid, log
        self.seen: set[int] = set(node_of.values())

    def __call__(self, clients: list[int], node_of: dict[int, int]) -> dict[int, int]:
        """The new nodes of ``clients`` that have registered so far (client id → node id)."""
        fresh = [n for n in self.grid.get_node_ids() if n not in self.seen]
        if not fresh:
            return {}
        found = _hello(self.grid, fresh, HELLO_TIMEOUT_S, strict=False)  # a node gone again is no error
        self.seen.update(fresh)  # one that did not answer in time is not waited for again
        back = {c: n for c, n in found.items() if c in clients}
        if back:
            node_of.update(back)
            self.log.emit(NODES, node_of={str(c): n for c, n in sorted(node_of.items())})
        return back


def plan_fit_step(settings: AppSettings, strategy: PlanFedAvg, wrapped: Strategy,
                  inner: Callable[[Grid, Context], None] | None) -> Callable[[Grid, Context], None]:
    """The round's fit step: Flower's (or SecAgg+'s), then the noise-only release of an empty Poisson round. A
    SecAgg+ round that halted (too few of a client's share holders replied) aggregated nothing: the event log
    says so (``halted``), so that its record reads as abandoned, and the run goes on with the model unchanged,
    as Flower's does.

    A Poisson round can draw nobody. Central DP must still release *something* with the same noise, or
    "the model did not move" would tell who was (not) sampled: the server adds Flower's noise (std
    z·C / per_round, C the DP wrapper's current clipping norm) to the unchanged model.
    """
    step = inner if inner is not None else default_fit_workflow
    cfg = settings.config
    dp = cfg.privacy.dp
    noise_empty = settings.plan.sampler.cohort_varies and dp.enabled and dp.mode != "local"

    def run(grid: Grid, context: Context) -> None:
        step(grid, context)
        r = int(context.state.config_records[MAIN_CONFIGS_RECORD][WorkflowKey.CURRENT_ROUND])
        if getattr(inner, "halted", False):  # a halted SecAgg+ round aggregated nothing: abandoned
            sa = cfg.privacy.secagg
            strategy.log.emit(HALTED, round=r, reason=(
                f"SecAgg+ halted: a client kept fewer than reconstruction_threshold = {sa.reconstruction_threshold} "
                f"of its {cfg.secagg_shares()} share holders among the replies (dropouts, or clients late at the "
                "round's close)"))
        if noise_empty and not settings.plan.sampled_clients(r):
            from flwr.compat.common import recorddict_compat as compat
            from flwr.supercore.differential_privacy import add_gaussian_noise_to_params

            strategy.seed_round(r, "empty-release")
            params = compat.arrayrecord_to_parameters(context.state.array_records[MAIN_PARAMS_RECORD], True)
            noised = add_gaussian_noise_to_params(params, dp.noise_multiplier,
                                                  float(getattr(wrapped, "clipping_norm", dp.clipping_norm)),
                                                  cfg.clients.per_round)
            context.state.array_records[MAIN_PARAMS_RECORD] = compat.parameters_to_arrayrecord(noised, True)

    return run


def virtual_close(settings: AppSettings) -> Callable[[int, list[dict]], set[int]] | None:
    """simulate with a round policy (``[round]``): which of a round's replies its virtual clock leaves out
    (None otherwise: every reply counts, or emulate's real clock decides)."""
    cfg = settings.config
    if cfg.engine != "simulate" or not cfg.round.closes_early:
        return None
    from fedbw.fl.virtual_clock import VirtualClose

    close = VirtualClose(settings.plan)
    return lambda r, events: close.late(r, settings.plan.sampled_clients(r), events)


def real_close(settings: AppSettings) -> StageClose | None:
    """emulate with a round policy: the training stage closes on the ServerApp's own (emulated) clock, as
    Flower's reply timeout does (None otherwise)."""
    cfg = settings.config
    if cfg.engine != "emulate" or not cfg.round.closes_early:
        return None
    return StageClose(cfg.round.deadline_s, cfg.round.enough(cfg.clients.per_round))


@app.main()
def main(grid: Grid, context: Context) -> None:
    settings = settings_for(context)
    plan = settings.plan
    log = EventLog(settings.events_path)
    try:
        log.emit(START, **EVENTS.stamp(), pid=os.getpid(), device=settings.device, clients=plan.config.clients.total, rounds=plan.rounds,
                 t=time.perf_counter())
        node_of = discover_clients(grid, plan.config.clients.total)
        log.emit(NODES, node_of={str(c): n for c, n in sorted(node_of.items())})
        state = RoundState()
        client_of = {n: c for c, n in node_of.items()}
        measured = MeasuringGrid(grid, log, client_of, lambda: state.round, measure=settings.measure,
                                 late_of=virtual_close(settings), close=real_close(settings),
                                 dropped_of=plan.dropped if (plan.config.engine == "simulate" and plan.offline) else None,
                                 training_stage=plan.dropout_stage)
        # ``strategy`` stays PlanFedAvg: Flower's DP wrappers do not forward attribute lookups. The plan's
        # budget caps the rounds at privacy.dp.max_epsilon; the strategy accounts each round as it ran and
        # stops earlier if dropouts spent more than planned.
        strategy = PlanFedAvg(settings, log, state, node_of, centralized_evaluator(settings),
                              come_back=ComeBack(grid, node_of, log) if plan.offline else None, client_of=client_of,
                              initial_parameters=initial_parameters(settings))
        wrapped = wrap_strategy(settings, strategy)
        legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=plan.rounds), strategy=wrapped)
        fit = fit_workflow(settings)
        if fit is not None:
            fit.observer = strategy.note_secagg
        workflow = DefaultWorkflow(fit_workflow=plan_fit_step(settings, strategy, wrapped, fit))
        rounds, stopped = plan.rounds, plan.stop_reason
        try:
            workflow(measured, legacy)
        except BudgetExhausted as exc:
            rounds, stopped = len(strategy.rounds), str(exc)
        log.emit(END, t=time.perf_counter(), rounds=rounds, stopped_early=stopped)
    except BaseException as exc:
        log.emit(ERROR, message=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=8))
        raise
    finally:
        log.close()
