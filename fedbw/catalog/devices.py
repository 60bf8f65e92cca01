"""Client compute profiles for estimating (and, in synthetic-compute mode, simulating) training time.

``effective_tflops`` is sustained training throughput (FLOP/s × 10^-12), well below datasheet peaks:
what small-batch PyTorch training reaches on that class of device. Sources: docs/catalog.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbw.catalog._lookup import lookup


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    effective_tflops: float
    description: str


DEVICE_PROFILES: dict[str, DeviceProfile] = {
    d.name: d
    for d in [
        DeviceProfile("phone", 0.05, "Recent smartphone CPU/NPU via a mobile runtime"),
        DeviceProfile("laptop-cpu", 0.1, "4–8 core laptop CPU, fp32 PyTorch"),
        DeviceProfile("desktop-gpu", 10.0, "Consumer GPU (RTX 3060–4070 class), mixed precision"),
        DeviceProfile("dc-gpu", 200.0, "H100 in bf16 at ≈ 20–40 % MFU (cross-silo client)"),
    ]
}


def get_device_profile(name: str) -> DeviceProfile:
    return lookup(DEVICE_PROFILES, name, "device profile", "fedbw profiles")
