"""Flower's SecAgg+ primitives measured on this machine, and the fitted model against a real round."""

from __future__ import annotations

import pytest

from fedbw.fl.privacy.costs import measure_secagg_costs, measure_secagg_round
from fedbw.netmodel.secagg_cost import client_round_s, server_round_s


@pytest.mark.slow  # ≈ 4 s: the quick measurement, then real rounds
def test_measured_constants_predict_a_real_round():
    c = measure_secagg_costs(repeats=3, quick=True)
    assert 0 < c.keygen_s < 0.05 and 0 < c.ecdh_s < 0.05 and c.prg_per_value_s > 0 and c.add_per_value_s > 0
    assert c.combine_key_s + 9 * c.combine_key_per_share_sq_s > c.combine_seed_s + 9 * c.combine_seed_per_share_sq_s
    assert "CPU" in c.machine and c.measured.endswith("Z")
    runs = [measure_secagg_round(5, 3, 50_000) for _ in range(3)]
    best_c = {s: min(r.client_s[s] for r in runs) for s in runs[0].client_s}  # as the benchmark: fastest repeat
    best_s = {s: min(r.server_s[s] for r in runs) for s in runs[0].server_s}
    model_c, model_s = client_round_s(3, 50_000, c), server_round_s(5, 3, 50_000, c)
    for stage in ("share_keys", "collect_masked_vectors"):  # the stages with crypto, within 4× on a busy box
        assert model_c[stage] / 4 < best_c[stage] < 4 * model_c[stage], stage
    assert model_s["unmask"] / 4 < best_s["unmask"] < 4 * model_s["unmask"]
    dropped = measure_secagg_round(5, 3, 50_000, dropped=1)
    assert dropped.dropped == 1 and set(dropped.client_s) == {"setup", "share_keys", "collect_masked_vectors",
                                                              "unmask"}
