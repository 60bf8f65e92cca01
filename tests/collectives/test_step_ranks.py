"""One DDP step on real gloo ranks: the variants, the bytes each sends, the profiler's breakdown."""

from __future__ import annotations

import json

import pytest

from fedbw import catalog
from fedbw.collectives.step import COMM_SHARE_LINE, VARIANTS, measure_step

from .conftest import marked

pytestmark = pytest.mark.slow


def test_variants_bytes_and_breakdown(rank_mark: str) -> None:
    m = measure_step("mlp", 2, batch_size=4, steps=2, warmup=1, accumulate=3, fabrics=["ib-ndr400"],
                     uplinks=["home-30"])
    grad = 4 * catalog.get_model("mlp").params
    v = {r.variant: r for r in m.variants}
    assert list(v) == list(VARIANTS)
    assert v["no-comm"].bytes_per_step == 0 and v["no-comm"].comm_s == 0
    for name in ("overlap", "no-overlap", "accumulate"):
        assert v[name].bytes_per_step == grad  # every gradient once per optimizer step
    assert v["fp16"].bytes_per_step == grad / 2
    assert 0 < v["powersgd"].bytes_per_step < grad / 4
    assert v["accumulate"].micro_batches == 3 and v["accumulate"].samples_per_step == 4 * 3 * 2
    assert v["overlap"].wire_bytes_per_step == grad  # 2(p−1)/p = 1 at two ranks
    for r in m.variants:
        assert r.step_s > 0 and 0 <= r.exposed_s <= r.comm_s + 1e-9 and 0 <= r.exposed_share <= 1
    assert v["no-overlap"].exposed_s > 0.5 * v["no-overlap"].comm_s  # nothing to hide it behind
    assert m.speedup(v["overlap"]) == pytest.approx(1.0)
    assert [r.network for r in m.modelled] == ["ib-ndr400", "home-30 (30 Mbps up)"]
    data = json.loads(json.dumps(m.to_json()))
    assert data["comm_share_line"] == COMM_SHARE_LINE and len(data["variants"]) == len(VARIANTS)
    assert not marked(rank_mark)
