"""FedAvg (legacy ``flwr.server.strategy``, the path SecAgg+ needs) that samples the plan's clients.

fedbw, not Flower, decides who trains each round — ``plan.sampled_clients(r)`` — so estimate,
simulate and emulate run the same federation. Evaluation is centralized on the server's held-out
split each round (no network cost); the round's end is logged after it.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from flwr.common import FitIns, Parameters, Scalar, parameters_to_ndarrays
from flwr.server.client_manager import ClientManager
from flwr.server.client_proxy import ClientProxy
from flwr.server.strategy import FedAvg

from fedbw.errors import RunError
from fedbw.fl.events import EVAL, ROUND_END, ROUND_START, EventLog
from fedbw.fl.settings import AppSettings

#: How long to wait for every SuperNode to register before round 1.
NODE_WAIT_S = 600.0


class RoundState:
    """Which round the workflow is in; 0 outside training rounds (read by the MeasuringGrid)."""

    def __init__(self) -> None:
        self.round = 0
        self.t_start = 0.0
        self.lock = threading.Lock()


class PlanFedAvg(FedAvg):
    """FedAvg whose ``configure_fit`` returns exactly the plan's sampled clients."""

    def __init__(self, settings: AppSettings, log: EventLog, state: RoundState, node_of: dict[int, int],
                 evaluate_fn: Callable[[Parameters], tuple[float, float]] | None,
                 epsilon_fn: Callable[[int], float | None] | None = None, **kwargs: Any) -> None:
        super().__init__(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=1, min_evaluate_clients=0,
                         min_available_clients=1, accept_failures=False, **kwargs)
        self.settings, self.log, self.state, self.node_of = settings, log, state, node_of
        self._evaluate_fn = evaluate_fn
        self._epsilon_fn = epsilon_fn

    def configure_fit(self, server_round: int, parameters: Parameters,
                      client_manager: ClientManager) -> list[tuple[ClientProxy, FitIns]]:
        plan = self.settings.plan
        ids = plan.sampled_clients(server_round)
        if not client_manager.wait_for(plan.config.clients.total, timeout=int(NODE_WAIT_S)):
            raise RunError(f"only {client_manager.num_available()} of {plan.config.clients.total} clients "
                           f"registered within {NODE_WAIT_S:.0f} s")
        proxies = client_manager.all()
        chosen = []
        for cid in ids:
            proxy = proxies.get(str(self.node_of[cid]))
            if proxy is None:
                raise RunError(f"client {cid} (node {self.node_of[cid]}) is not connected")
            chosen.append(proxy)
        with self.state.lock:
            self.state.round, self.state.t_start = server_round, time.perf_counter()
        self.log.emit(ROUND_START, round=server_round, clients=ids, t=self.state.t_start)
        fit_ins = FitIns(parameters, {"round": server_round})
        return [(p, fit_ins) for p in chosen]

    def aggregate_fit(self, server_round: int, results: list, failures: list) -> tuple[Parameters | None,
                                                                                      dict[str, Scalar]]:
        if failures:
            reasons = "; ".join(str(f if isinstance(f, BaseException) else f[1].status.message) for f in failures[:3])
            raise RunError(f"round {server_round}: {len(failures)} client(s) failed: {reasons}")
        return super().aggregate_fit(server_round, results, failures)

    def evaluate(self, server_round: int, parameters: Parameters) -> tuple[float, dict[str, Scalar]] | None:
        """Centralized evaluation, then the round's end (it is the last step of a round)."""
        loss = accuracy = None
        if self._evaluate_fn is not None:
            loss, accuracy = self._evaluate_fn(parameters)
        if server_round == 0:
            if loss is not None:
                self.log.emit(EVAL, round=0, loss=loss, accuracy=accuracy)
        else:
            with self.state.lock:
                wall = time.perf_counter() - self.state.t_start
                self.state.round = 0
            epsilon = self._epsilon_fn(server_round) if self._epsilon_fn is not None else None
            self.log.emit(ROUND_END, round=server_round, loss=loss, accuracy=accuracy, epsilon=epsilon,
                          wall_time_s=wall)
        return None if loss is None else (loss, {"accuracy": accuracy})


def centralized_evaluator(settings: AppSettings) -> Callable[[Parameters], tuple[float, float]] | None:
    """Loss/accuracy of the global model on the held-out split; ``None`` in synthetic-compute mode
    (its updates are not trained, so there is nothing to evaluate)."""
    if settings.synthetic:
        return None
    from fedbw.fl.data import is_token_model, holdout_dataset
    from fedbw.fl.train import evaluate, seeded_model, set_parameters

    plan = settings.plan
    model = seeded_model(plan.model.name, settings.config.seed, settings.device)
    data = holdout_dataset(plan)
    tokens = is_token_model(plan)

    def run(parameters: Parameters) -> tuple[float, float]:
        set_parameters(model, parameters_to_ndarrays(parameters))
        return evaluate(model, data, device=settings.device, tokens=tokens)

    return run
