"""The same training step modelled on catalog fabrics and on home uplinks, with the remedies.

Per network: compute from the catalog's training FLOPs and a device profile (the same device on every
row, so only the network differs), one AllReduce of the gradient from the α-β model, and the
communication share of the step — without overlap (compute + AllReduce), with DDP's overlap at best
(only the backward pass, ≈ 2/3 of the compute, can hide an AllReduce), and for each remedy: fp16 and
PowerSGD shrink the bytes by the ratio *measured* in the step, accumulation of k micro-batches
spreads one AllReduce over k times the compute. A home uplink is a ring link whose bandwidth is the
profile's upload payload rate and whose per-step latency is half its RTT.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from fedbw import catalog
from fedbw.links import profile_link
from fedbw.netmodel import best_allreduce

#: Share of a training step's FLOPs in the backward pass (forward ≈ 1/3, backward ≈ 2/3).
BACKWARD_SHARE = 2.0 / 3.0
DEFAULT_FABRICS = ("nvlink4", "ib-ndr400", "roce-100g", "eth-10g", "eth-1g")
DEFAULT_UPLINKS = ("home-30", "home-80", "cross-silo-1g")


@dataclass(frozen=True)
class ModelledStep:
    network: str
    kind: str  #: "fabric" or "uplink"
    ranks: int
    compute_s: float
    allreduce_s: float
    share_no_overlap: float
    share_overlap: float  #: exposed share with DDP's overlap at best
    share_fp16: float | None
    share_powersgd: float | None
    share_accumulate: float
    accumulate: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _share(comm_s: float, compute_s: float) -> float:
    return comm_s / (comm_s + compute_s) if comm_s + compute_s > 0 else 0.0


def model_step(network: str, kind: str, ranks: int, compute_s: float, grad_bytes: float,
               ratios: dict[str, float], accumulate: int) -> ModelledStep:
    """One row: the step on ``network`` with the measured byte ratios of fp16 and PowerSGD (if known)."""
    if kind == "fabric":
        f = catalog.get_fabric(network)
        busbw, alpha = f.busbw_gbps, f.alpha_us * 1e-6
        label = network
    else:
        link = profile_link(network)
        busbw, alpha = link.up_payload_mbps / 8e3, link.rtt_ms / 2e3
        label = f"{network} ({link.up_mbps:g} Mbps up)"

    def ar(nbytes: float) -> float:
        return best_allreduce(nbytes, ranks, busbw, alpha).time_s

    t = ar(grad_bytes)
    exposed = max(0.0, t - BACKWARD_SHARE * compute_s)
    fp16 = _share(ar(grad_bytes * ratios["fp16"]), compute_s) if "fp16" in ratios else None
    psgd = _share(ar(grad_bytes * ratios["powersgd"]), compute_s) if "powersgd" in ratios else None
    return ModelledStep(label, kind, ranks, compute_s, t, _share(t, compute_s),
                        exposed / (compute_s + exposed) if compute_s + exposed > 0 else 0.0, fp16, psgd,
                        _share(t, accumulate * compute_s), accumulate)


def model_steps(model: str, batch_size: int, ranks: int, device_profile: str, grad_bytes: float,
                ratios: dict[str, float], accumulate: int, fabrics: list[str] | None = None,
                uplinks: list[str] | None = None) -> list[ModelledStep]:
    """Every fabric and uplink: the same model, batch per rank and device, only the network changes."""
    spec = catalog.get_model(model)
    device = catalog.get_device_profile(device_profile)
    compute_s = spec.training_flops_per_sample * batch_size / (device.effective_tflops * 1e12)
    rows = [model_step(f, "fabric", ranks, compute_s, grad_bytes, ratios, accumulate)
            for f in (fabrics if fabrics is not None else DEFAULT_FABRICS)]
    rows += [model_step(u, "uplink", ranks, compute_s, grad_bytes, ratios, accumulate)
             for u in (uplinks if uplinks is not None else DEFAULT_UPLINKS)]
    return rows
