"""Access-link profiles: what a federated client's connection to the server looks like.

Rates are line rates as ISPs and speed tests quote them. TCP payload moves at
``rate × tcp_efficiency`` (headers, ACK-clocking); :mod:`fedbw.links` turns a profile into the payload
rates both the analytic model and the shaper use, so the factor is applied in one place.
"""

from __future__ import annotations

import math
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
        LinkProfile("loopback", math.inf, math.inf, 0, 0, "No link limit: Flower's own costs alone (fedbw calibrate)"),
    ]
}


def get_link_profile(name: str) -> LinkProfile:
    return lookup(LINK_PROFILES, name, "link profile", "fedbw profiles")


@dataclass(frozen=True)
class ServerLinkProfile:
    """The server's own network link: every client's download leaves through ``up``, every upload
    arrives through ``down`` (line rates; TCP payload at ``rate × tcp_efficiency``)."""

    name: str
    up_mbps: float
    down_mbps: float
    description: str
    tcp_efficiency: float = TCP_ETHERNET_EFFICIENCY


#: ``server.link = "none"``: the server's link is not a limit (the links-only model of fedbw 0.1).
NO_SERVER_LINK = "none"

SERVER_LINKS: dict[str, ServerLinkProfile] = {
    s.name: s
    for s in [
        ServerLinkProfile("server-1g", 1000, 1000, "A server on 1 GbE (an on-premise box, a small colo server)"),
        ServerLinkProfile("cloud-vm-5g", 5000, 5000, "A cloud VM's sustained network bandwidth, 5 Gbps"),
        ServerLinkProfile("server-10g", 10000, 10000, "A data-center server on 10 GbE (the default)"),
        ServerLinkProfile("server-25g", 25000, 25000, "A data-center server on 25 GbE"),
    ]
}


def get_server_link(name: str) -> ServerLinkProfile:
    return lookup(SERVER_LINKS, name, "server link", "fedbw profiles")
