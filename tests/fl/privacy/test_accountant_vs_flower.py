"""fedbw's ε against Flower 1.42's own ``flwr.serverapp.RdpAccountant``, within 1e-6 relative.

Where both describe the same mechanism they must agree: Poisson sampling under add/remove; a fixed-size
sample without replacement under replace-one (Flower's event takes the noise multiplier relative to the
replace-one sensitivity, which for Flower's noise z·C/per_round on a mean of per_round updates is z/2);
and — through Flower's new-API fixed-clipping strategy, the one Flower accounts itself — a run where
every client takes part (no amplification; fedbw: Poisson with q = 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import (
    GaussianPrivacyEvent,
    NeighboringRelation,
    PrivacyConfig,
    RdpAccountant,
    SamplingMethod,
)

from fedbw.config import config_from_dict
from fedbw.fl.privacy.loopback import LoopbackGrid, task_identity
from fedbw.config.accounting import config_epsilons
from fedbw.privacy.accounting import CentralDp, central_epsilon

REL = 1e-6
#: (population, per_round, z, rounds)
VECTORS = [(1000, 50, 1.0, 30), (6, 5, 1.0, 3), (10, 5, 1.1, 3), (100, 10, 0.7, 12), (5000, 100, 1.3, 100)]


def _flower(method: SamplingMethod, relation: NeighboringRelation, population: int, per_round: int, z: float,
            rounds: int) -> float:
    acc = RdpAccountant(PrivacyConfig(target_delta=1e-5, population_size=population, neighboring_relation=relation,
                                      sampling_method=method))
    acc.compose(GaussianPrivacyEvent(noise_multiplier=z, sample_size=per_round, population_size=population), rounds)
    return acc.get_privacy_spent().epsilon


@pytest.mark.parametrize("population, per_round, z, rounds", VECTORS)
def test_poisson_equals_flowers_accountant(population, per_round, z, rounds):
    ours = central_epsilon(CentralDp.of("poisson", population, per_round, z), [None] * rounds, 1e-5)
    theirs = _flower(SamplingMethod.POISSON, NeighboringRelation.ADD_OR_REMOVE_ONE, population, per_round, z, rounds)
    assert ours == pytest.approx(theirs, rel=REL)


@pytest.mark.parametrize("population, per_round, z, rounds", VECTORS)
def test_fixed_size_equals_flowers_accountant_without_replacement(population, per_round, z, rounds):
    ours = central_epsilon(CentralDp.of("fixed", population, per_round, z), [None] * rounds, 1e-5)
    theirs = _flower(SamplingMethod.WITHOUT_REPLACEMENT, NeighboringRelation.REPLACE_ONE, population, per_round,
                     z / 2, rounds)
    assert ours == pytest.approx(theirs, rel=REL)


def _message_app() -> ClientApp:
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Any) -> Message:
        arrays = msg.content["arrays"].to_numpy_ndarrays()
        pid = int(context.node_config["partition-id"])
        trained = [a + np.float32(0.01 * (pid + 1)) for a in arrays]
        content = RecordDict({"arrays": ArrayRecord(trained), "metrics": MetricRecord({"num-examples": 10})})
        return Message(content=content, reply_to=msg)

    return app


def test_new_api_fixed_clipping_strategy_reports_fedbws_epsilon():
    """Flower accounts its new-API fixed-clipping release itself (no amplification, add/remove); a fedbw
    config with every client in every round (Poisson, q = 1) is that mechanism."""
    from flwr.common.constant import SUPERLINK_NODE_ID
    from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

    n, rounds, z = 4, 3, 1.3
    accountant = RdpAccountant(PrivacyConfig(target_delta=1e-5, population_size=n,
                                             neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
                                             sampling_method=SamplingMethod.NO_AMPLIFICATION))
    strategy = DifferentialPrivacyServerSideFixedClipping(
        FedAvg(fraction_evaluate=0.0, min_train_nodes=n, min_available_nodes=n), noise_multiplier=z,
        clipping_norm=1.0, num_sampled_clients=n, accountant=accountant)
    grid = LoopbackGrid(_message_app(), n)
    with task_identity(1, SUPERLINK_NODE_ID):
        strategy.start(grid=grid, initial_arrays=ArrayRecord([np.zeros(3, dtype=np.float32)]), num_rounds=rounds)
    cfg = config_from_dict({"engine": "estimate", "clients": {"total": n, "per_round": n, "sampling": "poisson"},
                            "training": {"rounds": rounds},
                            "privacy": {"dp": {"enabled": True, "mode": "central-server-fixed",
                                               "noise_multiplier": z}}})
    spent = strategy.privacy_spent()
    assert spent is not None and spent.num_releases == rounds
    assert config_epsilons(cfg)[-1] == pytest.approx(spent.epsilon, rel=REL)
