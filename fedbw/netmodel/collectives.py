"""α-β-γ cost of AllReduce (Hockney model; Thakur, Rabenseifner & Gropp 2005).

For p ranks and n bytes: α is the latency of one step, β seconds per byte on a rank's link
(1 / bus bandwidth), γ seconds per byte of reduction arithmetic. nccl-tests reports
algbw = n / t and busbw = algbw · 2(p−1)/p, which makes busbw comparable to the link rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ALGORITHMS = ("ring", "recursive-doubling", "rabenseifner")


@dataclass(frozen=True)
class AllReduceEstimate:
    algorithm: str
    ranks: int
    size_bytes: float
    time_s: float

    @property
    def algbw_gbps(self) -> float:
        """GB/s (10^9 bytes) as nccl-tests prints it: message size over time."""
        return self.size_bytes / self.time_s / 1e9 if self.time_s > 0 else math.inf

    @property
    def busbw_gbps(self) -> float:
        return busbw_from_algbw(self.algbw_gbps, self.ranks)

    @property
    def bytes_per_rank(self) -> float:
        """Bytes each rank sends (ring/Rabenseifner optimum 2(p−1)/p · n)."""
        return 2.0 * (self.ranks - 1) / self.ranks * self.size_bytes


def busbw_from_algbw(algbw: float, ranks: int) -> float:
    """nccl-tests' AllReduce bus bandwidth: algbw · 2(p−1)/p."""
    return algbw * 2.0 * (ranks - 1) / ranks


def allreduce(size_bytes: float, ranks: int, busbw_gbps: float, alpha_s: float, algorithm: str = "ring",
              gamma_s_per_byte: float = 0.0) -> AllReduceEstimate:
    """AllReduce time for one algorithm.

    ring:                2(p−1)α + 2(p−1)/p·nβ + (p−1)/p·nγ
    recursive-doubling:  ⌈log2 p⌉α + ⌈log2 p⌉·nβ + ⌈log2 p⌉·nγ   (latency-optimal, small n)
    rabenseifner:        2⌈log2 p⌉α + 2(p−1)/p·nβ + (p−1)/p·nγ    (reduce-scatter + allgather
                         by recursive halving/doubling; exact for powers of two)
    """
    if ranks < 1:
        raise ValueError(f"ranks must be ≥ 1, got {ranks}")
    if size_bytes < 0 or busbw_gbps <= 0 or alpha_s < 0 or gamma_s_per_byte < 0:
        raise ValueError("size ≥ 0, busbw > 0, alpha ≥ 0 and gamma ≥ 0 required")
    p, n = ranks, float(size_bytes)
    beta = 1.0 / (busbw_gbps * 1e9)
    if p == 1:
        t = 0.0
    elif algorithm == "ring":
        t = 2 * (p - 1) * alpha_s + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma_s_per_byte
    elif algorithm == "recursive-doubling":
        steps = math.ceil(math.log2(p))
        t = steps * (alpha_s + n * beta + n * gamma_s_per_byte)
    elif algorithm == "rabenseifner":
        steps = math.ceil(math.log2(p))
        t = 2 * steps * alpha_s + 2 * (p - 1) / p * n * beta + (p - 1) / p * n * gamma_s_per_byte
    else:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}")
    return AllReduceEstimate(algorithm, p, n, t)


def best_allreduce(size_bytes: float, ranks: int, busbw_gbps: float, alpha_s: float,
                   gamma_s_per_byte: float = 0.0) -> AllReduceEstimate:
    """The fastest of the modelled algorithms, as a tuned library (NCCL, MPI) would pick."""
    return min(
        (allreduce(size_bytes, ranks, busbw_gbps, alpha_s, a, gamma_s_per_byte) for a in ALGORITHMS),
        key=lambda e: e.time_s,
    )


def hierarchical_allreduce(size_bytes: float, nodes: int, gpus_per_node: int, intra_busbw_gbps: float,
                           intra_alpha_s: float, inter_busbw_gbps: float, inter_alpha_s: float) -> AllReduceEstimate:
    """Two-level AllReduce as NCCL runs it across nodes: reduce-scatter inside each node, a ring
    AllReduce of each 1/g shard across nodes (g NICs in parallel), then an all-gather inside the node.

    Shows what happens past one node: time steps up once traffic leaves NVLink, then grows with
    the α term only — linearly in the node count, not exponentially.
    """
    g, m, n = gpus_per_node, nodes, float(size_bytes)
    intra_beta = 1.0 / (intra_busbw_gbps * 1e9)
    t = 0.0
    if g > 1:  # reduce-scatter + all-gather inside the node: each half of a ring AllReduce
        t += 2 * ((g - 1) * intra_alpha_s + (g - 1) / g * n * intra_beta)
    if m > 1:
        t += allreduce(n / g, m, inter_busbw_gbps, inter_alpha_s, "ring").time_s
    return AllReduceEstimate("hierarchical", g * m, n, t)
