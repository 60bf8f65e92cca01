"""fedbw's ClientApp (Flower legacy path: a NumPyClient from ``client_fn``, mods around it).

Client identity: Flower's ``partition-id`` node config is the fedbw client id (simulation sets it;
emulate passes ``--node-config partition-id=… num-partitions=…``). Real mode trains the model on the
client's partition; synthetic mode skips training and returns a model-shaped update (the parameters
it received) with the compute time the plan derives from the device profile — the network sees the
same bytes, the machine does almost no work.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
from flwr.app import ArrayRecord, Context
from flwr.client import Client, ClientApp, NumPyClient

from fedbw.fl.measure import report_compute
from fedbw.fl.settings import THREADS_ENV, AppSettings, settings_for
from fedbw.fl.wiring import fedbw_mod

#: Environment knob the engine sets: torch threads per ClientApp process (Ray actors share 2 cores).
BUFFERS_STATE = "fedbw.buffers"
PARTITION_ID = "partition-id"

_models: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {}


def client_id(context: Context) -> int:
    try:
        return int(context.node_config[PARTITION_ID])
    except KeyError:
        from fedbw.errors import RunError

        raise RunError("this SuperNode has no partition-id; start it with --node-config "
                       '"partition-id=N num-partitions=M" (N = fedbw client id)') from None


def _model(settings: AppSettings) -> Any:
    """One model object per process, reused across messages (parameters are overwritten each time)."""
    import torch

    from fedbw.fl.train import seeded_model

    key = (settings.plan.model.name, settings.device)
    if key not in _models:
        if (threads := os.environ.get(THREADS_ENV)):
            torch.set_num_threads(int(threads))
        m = seeded_model(key[0], settings.config.seed, settings.device)
        _models[key] = (m, {k: v.clone() for k, v in m.named_buffers()})
    return _models[key]


def synthetic_update(parameters: list[np.ndarray], seed: int, server_round: int, cid: int) -> list[np.ndarray]:
    """A model-shaped update without training: what was received plus small seeded noise.

    Echoing the parameters unchanged would let a deployment skip the upload (the SuperLink already
    holds those objects), so the noise keeps the bytes honest.
    """
    rng = np.random.default_rng([seed, server_round, cid, 13])
    return [(a + rng.standard_normal(a.shape, dtype=np.float32) * np.float32(1e-4)).astype(np.float32, copy=False)
            for a in parameters]


class FedbwClient(NumPyClient):
    def __init__(self, settings: AppSettings, cid: int, context: Context) -> None:
        self.settings, self.cid, self.ctx = settings, cid, context

    def get_properties(self, config: dict[str, Any]) -> dict[str, Any]:
        return {PARTITION_ID: self.cid}

    def fit(self, parameters: list[np.ndarray], config: dict[str, Any]) -> tuple[list[np.ndarray], int, dict]:
        s = self.settings
        plan = s.plan
        server_round = int(config.get("round", 0))
        if s.synthetic:
            n = plan.clients[self.cid].num_samples
            compute_s = plan.clients[self.cid].est_compute_s
            if s.config.engine == "emulate":
                # emulate runs on the wall clock: the device profile's compute time must really pass
                time.sleep(compute_s)
            report_compute(self.ctx, compute_s, float("nan"), n)
            return synthetic_update(parameters, s.config.seed, server_round, self.cid), n, {}
        from fedbw.fl.data import client_dataset, is_token_model
        from fedbw.fl.train import get_parameters, set_parameters, train

        model, default_buffers = _model(s)
        set_parameters(model, parameters)
        self._load_buffers(model, default_buffers)
        cfg = s.config.training
        loss, n, compute_s = train(
            model, client_dataset(plan, self.cid), device=s.device, epochs=cfg.local_epochs, steps=cfg.local_steps,
            batch_size=cfg.batch_size, learning_rate=cfg.learning_rate,
            seed=(s.config.seed * 1_000_003 + server_round * 7_919 + self.cid) & 0x7FFFFFFF, tokens=is_token_model(plan))
        self._save_buffers(model)
        report_compute(self.ctx, compute_s, loss, n)
        return get_parameters(model), n, {"train_loss": loss}

    def _load_buffers(self, model: Any, defaults: dict[str, Any]) -> None:
        """Buffers (BatchNorm statistics) stay on the client between its rounds (FedBN)."""
        if not defaults:
            return
        rec = self.ctx.state.array_records.get(BUFFERS_STATE)
        state = rec.to_torch_state_dict() if rec is not None else defaults
        model.load_state_dict(state, strict=False)

    def _save_buffers(self, model: Any) -> None:
        buffers = {k: v.detach().cpu() for k, v in model.named_buffers()}
        if buffers:
            self.ctx.state.array_records[BUFFERS_STATE] = ArrayRecord(buffers)


def client_fn(context: Context) -> Client:
    return FedbwClient(settings_for(context), client_id(context), context).to_client()


app = ClientApp(client_fn=client_fn, mods=[fedbw_mod])
