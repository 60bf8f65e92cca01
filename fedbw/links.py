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
from fedbw.catalog.traces import load_named_trace
from fedbw.netmodel import ClientLink
from fedbw.netmodel.link_rate import LinkRate
from fedbw.errors import ConfigError
from fedbw.traces import RateSeries, RateTrace
from fedbw.netmodel.timeline import UNLIMITED, ServerLink

if TYPE_CHECKING:
    from fedbw.config import ExperimentConfig, LinkOverride
    from fedbw.config.sections import LinkShare
    from fedbw.shaper import LinkSpec

Trace = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class AccessLink:
    """One client's link as configured. ``profile`` is the catalog name, ``*`` appended when an
    override changed its numbers. With ``trace`` the link's rates follow that trace (line rates, as a
    profile's), read from ``trace_offset_s`` into it at the first round's start; ``up_mbps``/``down_mbps``
    are then the trace's means and the profile keeps RTT and jitter."""

    profile: str
    up_mbps: float  #: line rates (client → server is "up")
    down_mbps: float
    rtt_ms: float
    jitter_ms: float  #: round-trip jitter (± half of it each way in the shaper)
    tcp_efficiency: float
    trace: RateTrace | None = None
    trace_offset_s: float = 0.0

    @property
    def up_payload_mbps(self) -> float:
        return self.up_mbps * self.tcp_efficiency

    @property
    def down_payload_mbps(self) -> float:
        return self.down_mbps * self.tcp_efficiency

    def model(self) -> ClientLink:
        """The network model's view: payload rates and RTT, and a traced link's rate per direction (made once
        per link: clients that share a profile share its link, and the model lays identical links out once)."""
        link = self.__dict__.get("_model")
        if link is None:
            rates = {}
            if self.trace is not None:
                to_bytes = self.tcp_efficiency * 1e6 / 8.0
                for d in ("up", "down"):
                    series = self.trace.series(d)
                    rates[f"{d}_rate"] = LinkRate(tuple((t, r * to_bytes) for t, r in series.steps), series.duration_s,
                                                  self.trace_offset_s % series.duration_s)
            link = ClientLink(self.up_payload_mbps, self.down_payload_mbps, self.rtt_ms / 1000.0, **rates)
            object.__setattr__(self, "_model", link)  # a cache, not a field: equality and replace() ignore it
        return link

    def trace_steps(self, direction: str, until_s: float, rate_factor: float = 1.0) -> Trace:
        """The shaper's form of this link's trace in ``direction``: payload rates (× ``rate_factor``) from the
        first round's start (the client's offset into the trace there) on, looped up to ``until_s``."""
        if self.trace is None:
            return ()
        series = self.trace.series(direction)
        offset = self.trace_offset_s % series.duration_s
        k = self.tcp_efficiency * rate_factor
        steps = [(t - offset, r * k) for t, r in series.looped(until_s + offset)]
        # the step in force at the offset starts at 0; the ones before it are gone
        first = max(i for i, (t, _) in enumerate(steps) if t <= 0.0)
        return ((0.0, steps[first][1]),) + tuple(steps[first + 1:])

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
    """A client's link after its ``network.overrides`` entry: a profile replaces the link (and its trace), a
    trace replaces the rates, numbers replace single fields (and mark the profile name with ``*``)."""
    if override.profile:
        link = profile_link(override.profile)
    if override.trace:
        link = with_trace(link, override.trace)
    changed = {k: v for k in ("up_mbps", "down_mbps", "rtt_ms", "jitter_ms")
               if (v := getattr(override, k)) is not None}
    if changed:
        link = replace(link, profile=f"{link.profile}*", **changed)
    return link


def with_trace(link: AccessLink, trace: str) -> AccessLink:
    """``link`` replaying ``trace``: its rates become the trace's (means for one-number views), its name
    ``profile~trace``."""
    t = load_named_trace(trace)
    return replace(link, profile=f"{link.profile.rstrip('*')}~{t.name}", up_mbps=t.mean("up"), down_mbps=t.mean("down"),
                   trace=t, trace_offset_s=0.0)


def assign_profiles(cfg: ExperimentConfig) -> list[LinkShare]:
    """Each client's mix entry: a largest-remainder split of clients over the mix, then a seeded shuffle
    over client ids."""
    total = cfg.clients.total
    shares = [m.share for m in cfg.network.mix]
    weight = sum(shares)
    exact = [s / weight * total for s in shares]
    counts = [math.floor(e) for e in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: (counts[i] - exact[i], i))
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    entries = [m for m, n in zip(cfg.network.mix, counts) for _ in range(n)]
    random.Random(f"{cfg.seed}:profiles").shuffle(entries)
    return entries


def planned_links(cfg: ExperimentConfig) -> list[AccessLink]:
    """Every client's link, in client-id order: its share of the mix (with the entry's trace), then its
    override; a traced link then gets its offset into the trace (``network.trace_phase``)."""
    overrides = {o.client: o for o in cfg.network.overrides}
    entries = assign_profiles(cfg)
    by_entry = {}
    for key in dict.fromkeys((m.profile, m.trace) for m in entries):
        profile, trace = key
        by_entry[key] = with_trace(profile_link(profile), trace) if trace else profile_link(profile)
    links = [by_entry[(m.profile, m.trace)] for m in entries]  # one AccessLink per entry, shared (it is frozen)
    for cid, o in overrides.items():
        if cid < len(links):
            links[cid] = with_override(links[cid], o)
    if cfg.network.trace_phase == "staggered":
        for cid, link in enumerate(links):
            if link.trace is not None:  # a seeded point of the trace per client: clients do not step together
                at = random.Random(f"{cfg.seed}:trace-phase:{cid}").random() * link.trace.duration_s
                links[cid] = replace(link, trace_offset_s=at)
    faults = cfg.faults  # stragglers and flaps are links too: every engine sees them (issue 32.1)
    for s in faults.stragglers:
        if s.client < len(links):
            links[s.client] = with_straggler(links[s.client], s.link_factor)
    for cid in sorted({f.client for f in faults.flaps}):
        if cid < len(links):
            links[cid] = with_flaps(links[cid], [(f.at_s, f.duration_s, f.direction) for f in faults.flaps
                                                  if f.client == cid], cid)
    return links


def with_straggler(link: AccessLink, factor: float) -> AccessLink:
    """A straggler's link (``[faults] stragglers``): every rate × ``factor``, its trace's too; named
    ``profile×factor``."""
    trace = link.trace
    if trace is not None:
        trace = RateTrace(f"{trace.name}×{factor:g}", trace.source, trace.format,
                          *(RateSeries(tuple((t, r * factor) for t, r in s.steps), s.duration_s)
                            for s in (trace.up, trace.down)))
    return replace(link, profile=f"{link.profile}×{factor:g}", up_mbps=link.up_mbps * factor,
                   down_mbps=link.down_mbps * factor, trace=trace)


#: A flap trace's period: far beyond any run, so its outages never come round again
FLAP_PERIOD_TAIL_S = 1e7


def with_flaps(link: AccessLink, flaps: list[tuple[float, float, str]], client: int) -> AccessLink:
    """A link that goes down (``[faults] flaps``: (at_s, duration_s, direction)) as a trace: its rates, 0 Mbps
    during each flap, counted from the first round's start (the trace's t = 0 in every engine). ConfigError for
    flaps that overlap, or on a link that replays a trace already (put the outage in that trace)."""
    if link.trace is not None:
        raise ConfigError(f"client {client}: faults.flaps on a traced link; put the outage in its trace (a step "
                          "of 0 Mbps) instead")
    spans = sorted((at, at + dur, d) for at, dur, d in flaps)
    for (_, end, _), (at, _, _) in zip(spans, spans[1:]):
        if at < end:
            raise ConfigError(f"faults.flaps for client {client} overlap (one starts at {at:g} s before the "
                              f"previous one ends); merge them into one longer flap")
    period = spans[-1][1] + FLAP_PERIOD_TAIL_S

    def series(direction: str, rate: float) -> RateSeries:
        steps: list[tuple[float, float]] = [(0.0, rate)]
        for at, end, d in spans:
            if d in ("both", direction):
                if steps[-1][0] == at:  # the flap starts where the last step starts (at 0, or as one ends)
                    steps.pop()
                steps += [(at, 0.0), (end, rate)]
        return RateSeries(tuple(steps), period)

    trace = RateTrace("flaps", f"faults.flaps of client {client}", "faults",
                      series("up", link.up_mbps), series("down", link.down_mbps))
    return replace(link, profile=f"{link.profile}~flaps", trace=trace, trace_offset_s=0.0)


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
