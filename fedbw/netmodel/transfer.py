"""A client's link as the model sees it, and the time to move one message over one direction of it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from fedbw.netmodel.link_rate import LinkRate


def serialization_time_s(num_bytes: float, payload_mbps: float) -> float:
    """Seconds to push ``num_bytes`` of TCP payload through ``payload_mbps`` (10^6 bit/s).

    A rate of zero means the link is down: the transfer never finishes (``inf``).
    """
    if num_bytes < 0:
        raise ValueError(f"num_bytes must be ≥ 0, got {num_bytes}")
    if payload_mbps < 0:
        raise ValueError(f"payload_mbps must be ≥ 0, got {payload_mbps}")
    if num_bytes == 0:
        return 0.0
    if payload_mbps == 0:
        return math.inf
    return num_bytes * 8.0 / (payload_mbps * 1e6)


def transfer_time_s(num_bytes: float, payload_mbps: float, one_way_latency_s: float = 0.0,
                    extra_round_trips: float = 0.0, rtt_s: float = 0.0) -> float:
    """One-way message time: propagation + serialization + any handshake round trips.

    Assumes a warm TCP connection whose window covers the bandwidth-delay product (true for the
    30–1000 Mbps, ≤ 100 ms links fedbw models: BDP ≤ 12.5 MB, well inside Linux autotuning), so
    slow start is not modelled; ``extra_round_trips`` charges connection set-up where it applies.
    """
    if one_way_latency_s < 0 or rtt_s < 0 or extra_round_trips < 0:
        raise ValueError("latencies and round trips must be ≥ 0")
    return one_way_latency_s + extra_round_trips * rtt_s + serialization_time_s(num_bytes, payload_mbps)


@dataclass(frozen=True)
class ClientLink:
    """What the timeline needs to know about one client's link (payload rates). A direction with a rate
    trace (``up_rate``/``down_rate``, :mod:`fedbw.netmodel.link_rate`) follows it; its ``*_payload_mbps``
    is then the trace's mean, for anything that asks for one number."""

    up_payload_mbps: float
    down_payload_mbps: float
    rtt_s: float
    up_rate: LinkRate | None = None
    down_rate: LinkRate | None = None

    def rate(self, direction: str) -> LinkRate | None:
        return self.up_rate if direction == "up" else self.down_rate

    @property
    def one_way_s(self) -> float:
        return self.rtt_s / 2.0

    @property
    def up_bytes_per_s(self) -> float:
        return mbps_to_bytes_per_s(self.up_payload_mbps)

    @property
    def down_bytes_per_s(self) -> float:
        return mbps_to_bytes_per_s(self.down_payload_mbps)


def mbps_to_bytes_per_s(mbps: float) -> float:
    """Mbps (10^6 bit/s) → bytes per second."""
    return mbps * 1e6 / 8.0
