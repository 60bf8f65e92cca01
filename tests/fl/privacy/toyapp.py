"""A tiny legacy NumPy app for driving Flower's workflows on the loopback grid.

Client i returns a fixed model (seeded by i) and 100 + i examples, so the exact FedAvg aggregate is
known and every comparison is against ground truth.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flwr.client import NumPyClient
from flwr.clientapp import ClientApp
from flwr.common import ndarrays_to_parameters
from flwr.server.strategy import FedAvg
from flwr.server.workflow.constant import MAIN_PARAMS_RECORD

from fedbw.fl.privacy.loopback import LoopbackGrid, run_legacy
from fedbw.fl.privacy.secagg_packed import _record_ndarrays

#: ~71k parameters in four arrays: big enough that per-message framing is < 2 % of an upload.
SHAPES = [(64, 32, 3, 3), (64,), (512, 100), (100,)]


def model(seed: int, scale: float = 0.1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(0, scale, s).astype(np.float32) for s in SHAPES]


def num_examples(pid: int) -> int:
    return 100 + pid


class ToyClient(NumPyClient):
    def __init__(self, pid: int) -> None:
        self.pid = pid

    def fit(self, parameters: list[np.ndarray], config: dict[str, Any]):
        return model(self.pid), num_examples(self.pid), {}

    def evaluate(self, parameters: list[np.ndarray], config: dict[str, Any]):
        return 0.0, 1, {}


def client_fn(context: Any):
    return ToyClient(int(context.node_config["partition-id"])).to_client()


def toy_app(mods: list[Any]) -> ClientApp:
    return ClientApp(client_fn=client_fn, mods=mods)


def fedavg(n: int, initial: list[np.ndarray] | None = None) -> FedAvg:
    return FedAvg(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=n, min_available_clients=n,
                  initial_parameters=ndarrays_to_parameters(initial if initial is not None else model(999)))


def exact_average(pids: list[int]) -> list[np.ndarray]:
    w = np.array([num_examples(p) for p in pids], dtype=np.float64)
    return [sum(w[j] * model(p)[k].astype(np.float64) for j, p in enumerate(pids)) / w.sum()
            for k in range(len(SHAPES))]


def global_model(context: Any) -> list[np.ndarray]:
    return _record_ndarrays(context.state.array_records[MAIN_PARAMS_RECORD])


def run(mods: list[Any], workflow: Any, n: int = 5, rounds: int = 1, strategy: Any = None, **grid_kw: Any):
    grid = LoopbackGrid(toy_app(mods), n, **grid_kw)
    ctx = run_legacy(grid, strategy if strategy is not None else fedavg(n), rounds, workflow)
    return grid, ctx
