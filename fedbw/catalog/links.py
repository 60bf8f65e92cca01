"""Access-link profiles: what a federated client's connection to the server looks like.

Rates are line rates as ISPs and speed tests quote them. TCP payload moves at
``rate × tcp_efficiency`` (headers, ACK-clocking); :mod:`fedbw.links` turns a profile into the payload
rates both the analytic model and the shaper use, so the factor is applied in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbw.catalog._lookup import lookup

#: TCP payload per Ethernet frame with a 1500-byte MTU and TCP timestamps: 1448 of 1514 bytes.
TCP_ETHERNET_EFFICIENCY = 1448 / 1514


@dataclass(frozen=True)
class LinkProfile:
    """A client's access link. ``up`` is client→server (uploads), ``down`` server→client."""

    name: str
    up_mbps: float
    down_mbps: float
    rtt_ms: float
    jitter_ms: float
    description: str
    tcp_efficiency: float = TCP_ETHERNET_EFFICIENCY


LINK_PROFILES: dict[str, LinkProfile] = {
    p.name: p
    for p in [
        LinkProfile("home-30", 30, 300, 25, 3, "Cable/DSL home broadband, 30 Mbps up (low end of the 30–80 band)"),
        LinkProfile("home-50", 50, 500, 20, 2, "Home broadband, 50 Mbps up (≈ fixed-broadband median upload)"),
        LinkProfile("home-80", 80, 1000, 15, 2, "Fibre-to-the-home plan, 80 Mbps up"),
        LinkProfile("mobile-4g", 10, 40, 50, 10, "LTE phone, typical upload/download"),
        LinkProfile("mobile-5g", 20, 200, 30, 5, "5G NSA phone, typical upload/download"),
        LinkProfile("cross-silo-1g", 1000, 1000, 10, 0.5, "Institution-to-server 1 Gbps symmetric (cross-silo FL)"),
    ]
}


def get_link_profile(name: str) -> LinkProfile:
    return lookup(LINK_PROFILES, name, "link profile", "fedbw profiles")
