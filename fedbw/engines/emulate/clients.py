"""The emulated clients: each one's shaped link and faults, from a plan or from one catalog profile.

Links come from :mod:`fedbw.links`, the same numbers the network model uses, stragglers and flaps
included (a straggler's link runs at a fraction of its rates, a flap is a trace that takes the link down
for a while); a drop kills the SuperNode as a given stage's message arrives.
"""

from __future__ import annotations


from fedbw.engines.emulate.federation import DropFault, EmulatedClient
from fedbw.errors import ConfigError
from fedbw.links import profile_link
from fedbw.flower_protocol import SECAGG_STAGES
from fedbw.plan import Plan


def clients_for_profile(n: int, profile: str, seed: int = 0) -> list[EmulatedClient]:
    """``n`` clients on one catalog link profile (``fedbw emulate --profile``)."""
    if n < 1:
        raise ConfigError(f"--clients must be at least 1, got {n}")
    access = profile_link(profile)
    return [EmulatedClient(i, access.profile, access.shaper_spec(seed=seed + i)) for i in range(n)]


def clients_for_plan(plan: Plan) -> list[EmulatedClient]:
    """One emulated client per planned client, on its planned link: stragglers and flaps are in it already
    (:func:`fedbw.links.planned_links`); a traced link (flaps included) replays its trace from the first
    round's start (fedbw.shaper.anchor) on."""
    out = []
    horizon = plan.config.emulate.timeout_s
    for pc in plan.clients:
        access = pc.access
        link = access.shaper_spec(seed=plan.config.seed * 100003 + pc.client_id,
                                  up_trace=access.trace_steps("up", horizon),
                                  down_trace=access.trace_steps("down", horizon))
        out.append(EmulatedClient(pc.client_id, pc.profile, link, cpu_speed=pc.cpu_speed))
    return out


def drops_for_plan(plan: Plan) -> list[DropFault]:
    """The clients to stop as their stage's message arrives: ``[faults] drops``, and the clients the plan
    has going off line mid-round (``clients.availability``), at the round's training stage; a client the
    plan samples again later comes back (a fresh SuperNode, :class:`DropFault`'s ``back``)."""
    order = {"fit": 0, **{s: i for i, s in enumerate(SECAGG_STAGES)}}
    offline = [DropFault(cid, r, order[plan.dropout_stage], back=_sampled_after(plan, cid, r))
               for r, ids in enumerate(plan.offline or [], start=1) for cid in ids]
    return [DropFault(d.client, d.round, order[d.stage]) for d in plan.config.faults.drops] + offline


def _sampled_after(plan: Plan, cid: int, round_index: int) -> bool:
    """Whether the plan samples client ``cid`` in a round after ``round_index``."""
    return any(cid in plan.sampled_clients(r) for r in range(round_index + 1, plan.rounds + 1))
