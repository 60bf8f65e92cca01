"""Child process for the slow test: packed SecAgg+ under Flower's Simulation Engine (Ray).

Prints one JSON line (aggregate error vs. the exact average, dtypes, measured bytes per stage) and
leaves with ``os._exit`` after shutting Ray down, so no Ray process outlives it.
Usage: ``python -m tests.fl.privacy.ray_packed MODE`` with MODE = stock | packed.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections import defaultdict
from typing import Any

N, ROUNDS = 4, 2


class SizingGrid:
    """Wraps the ServerApp's Grid and sizes every message pair, per stage."""

    def __init__(self, grid: Any) -> None:
        self._grid = grid
        self.bytes: dict[str, list[tuple[int, int]]] = defaultdict(list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._grid, name)

    def send_and_receive(self, messages: Any, *, timeout: float | None = None) -> Any:
        from fedbw.fl.privacy.loopback import message_bytes, stage_of

        messages = list(messages)
        down = {m.metadata.dst_node_id: (stage_of(m), message_bytes(m)) for m in messages}
        replies = list(self._grid.send_and_receive(messages, timeout=timeout))
        for r in replies:
            stage, d = down[r.metadata.src_node_id]
            self.bytes[f"{r.metadata.group_id}/{stage}"].append((d, message_bytes(r)))
        return replies


def main(mode: str) -> int:
    from flwr.client.mod import secaggplus_mod
    from flwr.server import LegacyContext, ServerConfig
    from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
    from flwr.serverapp import ServerApp
    from flwr.simulation import run_simulation

    from fedbw.fl.privacy.secagg_packed import PackedSecAggPlusWorkflow, packed_secaggplus_mod
    from tests.fl.privacy.toyapp import exact_average, fedavg, global_model, toy_app

    result: dict[str, Any] = {}
    server_app = ServerApp()

    @server_app.main()
    def _main(grid: Any, context: Any) -> None:
        legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=ROUNDS), strategy=fedavg(N))
        cls = PackedSecAggPlusWorkflow if mode == "packed" else SecAggPlusWorkflow
        sizing = SizingGrid(grid)
        DefaultWorkflow(fit_workflow=cls(num_shares=3, reconstruction_threshold=2))(sizing, legacy)
        out = global_model(legacy)
        truth = exact_average(list(range(N)))
        result["max_err"] = max(float(abs(a.astype("float64") - t).max()) for a, t in zip(out, truth))
        result["dtypes"] = sorted({str(a.dtype) for a in out})
        result["bytes"] = {k: v[0] for k, v in sizing.bytes.items()}

    mod = packed_secaggplus_mod if mode == "packed" else secaggplus_mod
    run_simulation(server_app=server_app, client_app=toy_app([mod]), num_supernodes=N,
                   backend_config={"init_args": {"num_cpus": 2, "include_dashboard": False, "logging_level": "ERROR"},
                                   "client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    print("RESULT " + json.dumps(result), flush=True)
    return 0 if result else 1


if __name__ == "__main__":
    code = 1
    try:
        code = main(sys.argv[1])
    except BaseException:  # noqa: BLE001 - the test reads stderr
        traceback.print_exc()
    finally:
        from fedbw.engines.simulate.child import leave

        leave(code)
