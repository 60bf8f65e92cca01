"""The emulated clients: each one's shaped link and faults, from a plan or from one catalog profile.

Links come from :mod:`fedbw.links`, the same numbers the network model uses; faults from the config's
``[faults]``: a straggler's link runs at a fraction of its rates, a flap takes the link down for a
while (a rate trace), a drop kills the SuperNode as a given stage's message arrives.
"""

from __future__ import annotations

from collections.abc import Sequence

from fedbw.engines.emulate.federation import DropFault, EmulatedClient
from fedbw.errors import ConfigError
from fedbw.links import profile_link
from fedbw.flower_protocol import SECAGG_STAGES
from fedbw.plan import Plan

Trace = tuple[tuple[float, float], ...]


def clients_for_profile(n: int, profile: str, seed: int = 0) -> list[EmulatedClient]:
    """``n`` clients on one catalog link profile (``fedbw emulate --profile``)."""
    if n < 1:
        raise ConfigError(f"--clients must be at least 1, got {n}")
    access = profile_link(profile)
    return [EmulatedClient(i, access.profile, access.shaper_spec(seed=seed + i)) for i in range(n)]


def flap_trace(base_mbps: float, flaps: Sequence[tuple[float, float]]) -> Trace:
    """A rate trace that takes a link down (0 Mbps) during each (start, duration) and back to ``base_mbps``."""
    steps: list[tuple[float, float]] = []
    for at_s, dur_s in sorted(flaps):
        if steps and at_s <= steps[-1][0]:
            raise ConfigError(f"faults.flaps for one client overlap (one starts at {at_s:g} s before the previous "
                              f"one ends); merge them into one longer flap")
        steps += [(at_s, 0.0), (at_s + dur_s, base_mbps)]
    return tuple(steps)


def clients_for_plan(plan: Plan) -> list[EmulatedClient]:
    """One emulated client per planned client: its planned link, with the config's stragglers and flaps."""
    faults = plan.config.faults
    factor = {s.client: s.link_factor for s in faults.stragglers}
    out = []
    for pc in plan.clients:
        f = factor.get(pc.client_id, 1.0)
        up, down = pc.access.up_payload_mbps * f, pc.access.down_payload_mbps * f
        flaps = [fl for fl in faults.flaps if fl.client == pc.client_id]
        if pc.access.trace is not None:  # the trace from the first round's start (fedbw.shaper.anchor) on
            if flaps:
                raise ConfigError(f"client {pc.client_id}: faults.flaps on a traced link; put the outage in its "
                                  "trace (a step of 0 Mbps) instead")
            horizon = plan.config.emulate.timeout_s
            up_trace = pc.access.trace_steps("up", horizon, f)
            down_trace = pc.access.trace_steps("down", horizon, f)
        else:
            up_trace = flap_trace(up, [(fl.at_s, fl.duration_s) for fl in flaps if fl.direction in ("both", "up")])
            down_trace = flap_trace(down, [(fl.at_s, fl.duration_s) for fl in flaps
                                           if fl.direction in ("both", "down")])
        link = pc.access.shaper_spec(seed=plan.config.seed * 100003 + pc.client_id, rate_factor=f,
                                     up_trace=up_trace, down_trace=down_trace)
        out.append(EmulatedClient(pc.client_id, pc.profile, link, cpu_speed=pc.cpu_speed))
    return out


def drops_for_plan(plan: Plan) -> list[DropFault]:
    """The clients to stop as their stage's message arrives: ``[faults] drops``, and the clients the plan
    has going off line mid-round (``clients.availability``), at the round's training stage."""
    order = {"fit": 0, **{s: i for i, s in enumerate(SECAGG_STAGES)}}
    training = order["collect_masked_vectors" if plan.config.privacy.secagg.enabled else "fit"]  # where it trains
    offline = [DropFault(cid, r, training) for r, ids in enumerate(plan.offline or [], start=1) for cid in ids]
    return [DropFault(d.client, d.round, order[d.stage]) for d in plan.config.faults.drops] + offline
