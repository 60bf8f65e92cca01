"""netmodel.payload's SecAgg+ byte model against bytes measured on Flower's real messages."""

from __future__ import annotations

import numpy as np
import pytest
from flwr.client.mod import secaggplus_mod
from flwr.server.workflow import SecAggPlusWorkflow

from fedbw.fl.measure import measure_mod
from fedbw.fl.privacy.secagg_packed import PackedSecAggPlusWorkflow, packed_secaggplus_mod
from fedbw.netmodel.payload import round_exchanges

from .toyapp import SHAPES, run

P = sum(int(np.prod(s)) for s in SHAPES)


@pytest.mark.parametrize("mode", ["stock", "packed"])
@pytest.mark.parametrize("num_shares", [3, 5])
def test_secagg_stage_bytes_match_the_model(mode, num_shares):
    mod, wf = ((secaggplus_mod, SecAggPlusWorkflow) if mode == "stock"
               else (packed_secaggplus_mod, PackedSecAggPlusWorkflow))
    grid, _ = run([measure_mod, mod], wf(num_shares=num_shares, reconstruction_threshold=2), n=7, rounds=2)
    for rnd in (1, 2):
        predicted = {e.stage: e for e in round_exchanges(P, len(SHAPES), rnd, secagg=mode,
                                                          num_neighbours=num_shares - 1)}
        for ex in (e for e in grid.exchanges if e.group_id == str(rnd)):
            pred = predicted[ex.stage]
            big = ex.stage == "collect_masked_vectors"
            assert ex.bytes_down == pytest.approx(pred.bytes_down, rel=0.01 if big else 0.04), (rnd, ex.stage)
            assert ex.bytes_up == pytest.approx(pred.bytes_up, rel=0.002 if big else 0.02), (rnd, ex.stage)
