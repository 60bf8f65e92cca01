"""ServerApp: legacy FedAvg over one random float32 vector (random: identical chunks would be sent once)."""

import numpy as np
from flwr.app import Context
from flwr.common import ndarrays_to_parameters
from flwr.server import LegacyContext, ServerConfig
from flwr.server.strategy import FedAvg
from flwr.server.workflow import DefaultWorkflow
from flwr.serverapp import Grid, ServerApp

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    initial = [np.random.default_rng(0).standard_normal(int(cfg["num-params"]), dtype=np.float32)]
    strategy = FedAvg(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=1, min_evaluate_clients=0,
                      min_available_clients=1, initial_parameters=ndarrays_to_parameters(initial))
    legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=int(cfg["num-server-rounds"])),
                           strategy=strategy)
    DefaultWorkflow()(grid, legacy)
