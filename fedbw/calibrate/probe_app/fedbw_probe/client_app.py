"""ClientApp: returns the vector with fresh noise (new bytes each round, no training)."""

import numpy as np
from flwr.client import NumPyClient
from flwr.clientapp import ClientApp


class ProbeClient(NumPyClient):
    def fit(self, parameters, config):
        rng = np.random.default_rng(int(config.get("server_round", 0)) + 1)
        return [p + rng.standard_normal(p.shape).astype(p.dtype) for p in parameters], 1, {}


app = ClientApp(client_fn=lambda context: ProbeClient().to_client())
