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
    #: single-thread CPU speed relative to the machine the Flower costs were calibrated on: Flower's own
    #: work on a client (starting a ClientApp process, hashing and parsing messages) divides by it
    cpu_speed: float = 1.0


DEVICE_PROFILES: dict[str, DeviceProfile] = {
    d.name: d
    for d in [
        DeviceProfile("phone", 0.05, "Recent smartphone CPU/NPU via a mobile runtime", cpu_speed=0.5),
        DeviceProfile("laptop-cpu", 0.1, "4–8 core laptop CPU, fp32 PyTorch", cpu_speed=1.0),
        DeviceProfile("desktop-gpu", 10.0, "Consumer GPU (RTX 3060–4070 class), mixed precision", cpu_speed=1.3),
        DeviceProfile("dc-gpu", 200.0, "H100 in bf16 at ≈ 20–40 % MFU (cross-silo client)", cpu_speed=1.0),
    ]
}


def get_device_profile(name: str) -> DeviceProfile:
    return lookup(DEVICE_PROFILES, name, "device profile", "fedbw profiles")
