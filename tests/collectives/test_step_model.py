"""The step modelled on fabrics and uplinks: compute from FLOPs, AllReduce from the α-β model."""

from __future__ import annotations

import pytest

from fedbw import catalog
from fedbw.collectives.step_model import BACKWARD_SHARE, model_step, model_steps
from fedbw.links import profile_link
from fedbw.netmodel import best_allreduce


def test_compute_and_allreduce_come_from_the_catalog() -> None:
    spec, dev = catalog.get_model("resnet18"), catalog.get_device_profile("dc-gpu")
    rows = model_steps("resnet18", 32, 8, "dc-gpu", 4.0 * spec.params, {"fp16": 0.5}, 4, ["ib-ndr400"], ["home-30"])
    ib, home = rows
    assert ib.compute_s == pytest.approx(spec.training_flops_per_sample * 32 / (dev.effective_tflops * 1e12))
    f = catalog.get_fabric("ib-ndr400")
    assert ib.allreduce_s == best_allreduce(4.0 * spec.params, 8, f.busbw_gbps, f.alpha_us * 1e-6).time_s
    link = profile_link("home-30")
    assert home.allreduce_s == best_allreduce(4.0 * spec.params, 8, link.up_payload_mbps / 8e3,
                                              link.rtt_ms / 2e3).time_s
    assert home.kind == "uplink" and "30 Mbps" in home.network
    assert home.share_no_overlap > 0.99 and ib.share_no_overlap < home.share_no_overlap


def test_remedies_lower_the_share() -> None:
    r = model_step("eth-10g", "fabric", 8, 0.05, 1e8, {"fp16": 0.5, "powersgd": 0.01}, 4)
    assert r.share_fp16 < r.share_no_overlap and r.share_powersgd < r.share_fp16
    assert r.share_accumulate == pytest.approx(r.allreduce_s / (r.allreduce_s + 4 * 0.05))
    exposed = max(0.0, r.allreduce_s - BACKWARD_SHARE * 0.05)
    assert r.share_overlap == pytest.approx(exposed / (0.05 + exposed))
    assert model_step("eth-10g", "fabric", 8, 0.05, 1e8, {}, 4).share_fp16 is None
