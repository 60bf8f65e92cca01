"""A client's access link: from a catalog profile (and per-client overrides) to what each engine needs.

One place turns a profile into numbers: the network model's :class:`~fedbw.netmodel.ClientLink` (TCP
payload rates, RTT) and the shaper's :class:`~fedbw.shaper.LinkSpec` (the same payload rates, RTT split
into two one-way delays, jitter) come from the same :class:`AccessLink`, so estimate, simulate and
emulate put the same link under every client. Profiles give line rates, as ISPs quote them; TCP
payload moves at ``rate × tcp_efficiency`` (the profile's, by default 1448/1514 for Ethernet).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from fedbw import catalog
from fedbw.netmodel import ClientLink
from fedbw.netmodel.timeline import UNLIMITED, ServerLink

if TYPE_CHECKING:
    from fedbw.config import ExperimentConfig, LinkOverride
    from fedbw.shaper import LinkSpec

Trace = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class AccessLink:
    """One client's link as configured. ``profile`` is the catalog name, ``*`` appended when an
    override changed its numbers."""

    profile: str
    up_mbps: float  #: line rates (client → server is "up")
    down_mbps: float
    rtt_ms: float
    jitter_ms: float  #: round-trip jitter (± half of it each way in the shaper)
    tcp_efficiency: float

    @property
    def up_payload_mbps(self) -> float:
        return self.up_mbps * self.tcp_efficiency

    @property
    def down_payload_mbps(self) -> float:
        return self.down_mbps * self.tcp_efficiency

    def model(self) -> ClientLink:
        """The network model's view: payload rates and RTT (made once per link: clients that share a
        profile share its link, and the model lays identical links out once)."""
        link = self.__dict__.get("_model")
        if link is None:
            link = ClientLink(self.up_payload_mbps, self.down_payload_mbps, self.rtt_ms / 1000.0)
            object.__setattr__(self, "_model", link)  # a cache, not a field: equality and replace() ignore it
        return link

    def shaper_spec(self, *, seed: int = 0, rate_factor: float = 1.0, up_trace: Trace = (),
                    down_trace: Trace = ()) -> LinkSpec:
        """The shaper's view: the same payload rates (× ``rate_factor``), RTT/2 each way, jitter, traces."""
        from fedbw.shaper import LinkSpec

        return LinkSpec.from_rtt(self.up_payload_mbps * rate_factor, self.down_payload_mbps * rate_factor,
                                 self.rtt_ms, self.jitter_ms, up_trace=up_trace, down_trace=down_trace, seed=seed)


def profile_link(name: str) -> AccessLink:
    """The access link of a catalog profile (CatalogError naming close matches for an unknown name)."""
    p = catalog.get_link_profile(name)
    return AccessLink(p.name, p.up_mbps, p.down_mbps, p.rtt_ms, p.jitter_ms, p.tcp_efficiency)


def with_override(link: AccessLink, override: LinkOverride) -> AccessLink:
    """A client's link after its ``network.overrides`` entry: a profile replaces the link, numbers replace
    single fields (and mark the profile name with ``*``)."""
    if override.profile:
        link = profile_link(override.profile)
    changed = {k: v for k in ("up_mbps", "down_mbps", "rtt_ms", "jitter_ms")
               if (v := getattr(override, k)) is not None}
    if changed:
        link = replace(link, profile=f"{link.profile}*", **changed)
    return link


def assign_profiles(cfg: ExperimentConfig) -> list[str]:
    """Largest-remainder split of clients over the mix, then a seeded shuffle over client ids."""
    total = cfg.clients.total
    shares = [m.share for m in cfg.network.mix]
    weight = sum(shares)
    exact = [s / weight * total for s in shares]
    counts = [math.floor(e) for e in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: (counts[i] - exact[i], i))
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    names = [m.profile for m, n in zip(cfg.network.mix, counts) for _ in range(n)]
    random.Random(f"{cfg.seed}:profiles").shuffle(names)
    return names


def planned_links(cfg: ExperimentConfig) -> list[AccessLink]:
    """Every client's link, in client-id order: its share of the mix, then its override."""
    overrides = {o.client: o for o in cfg.network.overrides}
    names = assign_profiles(cfg)
    by_name = {name: profile_link(name) for name in dict.fromkeys(names)}
    links = [by_name[name] for name in names]  # one AccessLink per profile, shared (it is frozen)
    for cid, o in overrides.items():
        if cid < len(links):
            links[cid] = with_override(links[cid], o)
    return links


def server_link(name: str) -> ServerLink:
    """The server's shared link as the model sees it (payload rates); ``"none"``: no limit."""
    if name == catalog.NO_SERVER_LINK:
        return UNLIMITED
    s = catalog.get_server_link(name)
    return ServerLink(s.up_mbps * s.tcp_efficiency, s.down_mbps * s.tcp_efficiency)


def server_shaper_spec(name: str) -> LinkSpec | None:
    """The server's link as the shaper's shared link (None: no limit): every client's uploads share the
    server's downlink (the shaper's "up"), every download its uplink ("down")."""
    from fedbw.shaper import LinkSpec

    s = server_link(name)
    if not s.limits:
        return None
    return LinkSpec(up_mbps=s.down_payload_mbps, down_mbps=s.up_payload_mbps)
