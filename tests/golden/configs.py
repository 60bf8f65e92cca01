"""The configs whose records are pinned (tests/golden/*.jsonl): estimate and simulate, every feature that
changes bytes or times. Synthetic compute keeps simulate's virtual clock deterministic (compute comes from
the device profile, bytes from seeded arrays), so every field but wall time and run id must match.

``framework = "none"``-style switches added later keep these configs on the link-only model: a golden
record pins behaviour that must not move when code moves, not the model's newest terms.
"""

from __future__ import annotations

from typing import Any

BASE: dict[str, Any] = {
    "framework": "none", "server": {"link": "none"},  # the links-only model the files pinned
    "seed": 7, "model": {"name": "small-cnn"}, "data": {"dataset": "synthetic"},
    "clients": {"total": 6, "per_round": 3, "compute": "synthetic", "device_profile": "laptop-cpu"},
    "training": {"rounds": 3, "local_epochs": 2, "batch_size": 16},
    "network": {"mix": [{"profile": "home-30", "share": 2}, {"profile": "home-80", "share": 1}],
                "overrides": [{"client": 2, "up_mbps": 12.0, "rtt_ms": 60.0}]},
}

GOLDEN: dict[str, dict[str, Any]] = {
    "estimate-plain": {**BASE, "engine": "estimate"},
    "estimate-secagg-stock": {**BASE, "engine": "estimate",
                              "privacy": {"secagg": {"enabled": True, "mode": "stock", "num_shares": 3}}},
    "estimate-dp-local-int8": {**BASE, "engine": "estimate", "compression": {"codec": "int8"},
                               "privacy": {"dp": {"enabled": True, "mode": "local", "local_epsilon": 0.5}}},
    "estimate-dp-central": {**BASE, "engine": "estimate", "model": {"name": "resnet18"},
                            "privacy": {"dp": {"enabled": True, "mode": "central-server-fixed",
                                               "noise_multiplier": 1.1}}},
    "simulate-plain": {**BASE, "engine": "simulate"},
    "simulate-secagg-packed-dp": {**BASE, "engine": "simulate",
                                  "privacy": {"secagg": {"enabled": True, "mode": "packed", "num_shares": 3},
                                              "dp": {"enabled": True, "mode": "central-client-fixed",
                                                     "noise_multiplier": 0.8}}},
}

#: Fields that differ between two runs of the same config by design.
VOLATILE = ("run_id", "wall_time_s")
