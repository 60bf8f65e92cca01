"""Data-center fabrics for the AllReduce comparison.

``busbw_gbps`` (GB/s, 10^9 bytes) is the bus bandwidth nccl-tests reports for large AllReduce
messages on that fabric — the per-rank bandwidth a ring actually sustains, protocol costs included.
``alpha_us`` is the per-step latency of one ring hop. Sources: docs/catalog.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbw.catalog._lookup import lookup


@dataclass(frozen=True)
class Fabric:
    name: str
    line_rate_gbps: float  #: nominal per-GPU (or per-NIC) unidirectional rate, GB/s
    busbw_gbps: float  #: achievable AllReduce bus bandwidth, GB/s
    alpha_us: float  #: latency per ring step, µs
    description: str
    scope: str  #: "intra-node" or "inter-node"


FABRICS: dict[str, Fabric] = {
    f.name: f
    for f in [
        Fabric("nvlink4", 450.0, 420.0, 3.0, "NVLink 4 (H100 SXM, NVSwitch), 8 GPUs in a node", "intra-node"),
        Fabric("nvlink3", 300.0, 230.0, 3.0, "NVLink 3 (A100 SXM, NVSwitch), 8 GPUs in a node", "intra-node"),
        Fabric("ib-ndr400", 50.0, 47.0, 6.0, "InfiniBand NDR 400 Gb/s, one NIC per GPU", "inter-node"),
        Fabric("ib-hdr200", 25.0, 24.0, 6.0, "InfiniBand HDR 200 Gb/s, one NIC per GPU", "inter-node"),
        Fabric("roce-100g", 12.5, 12.0, 8.0, "RoCE v2 100 Gb/s Ethernet", "inter-node"),
        Fabric("eth-25g", 3.125, 2.94, 25.0, "25 GbE, TCP sockets (94 % TCP efficiency)", "inter-node"),
        Fabric("eth-10g", 1.25, 1.176, 30.0, "10 GbE, TCP sockets (94 % TCP efficiency)", "inter-node"),
        Fabric("eth-1g", 0.125, 0.1176, 50.0, "1 GbE, TCP sockets (94 % TCP efficiency)", "inter-node"),
    ]
}


def get_fabric(name: str) -> Fabric:
    return lookup(FABRICS, name, "fabric", "fedbw profiles")
