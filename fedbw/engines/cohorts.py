"""Who trains each round when clients come and go (``clients.availability``): decided once, for every engine.

Why here and why once: a round can only sample clients that are on line when it starts, and when it starts
depends on how long the rounds before it took. If every engine sampled on its own clock, estimate, simulate
and emulate would train different cohorts and could not be compared (and a cohort would depend on the host's
speed). So the plan's rounds are laid out on the model's clock (:func:`fedbw.engines.estimate.estimate_round`,
Flower's costs included), round by round: round r samples ``clients.per_round`` (× ``round.over_select``) of
the clients on line at its planned start, seeded; a sampled client whose on-line time ends before its
training reply is a planned dropout of that round (the server pushes it the training message and waits for
Flower to report it gone: its heartbeat lapses, :class:`fedbw.netmodel.close.SecAggDropouts`; a deadline closes
the stage first); the next round starts when this one ends on that clock. The plan carries the cohorts, the
dropouts, each round's start and how many clients were on line; every engine runs those.

What it leaves out, said where a user reads it (docs/population.md): a client's reply time is judged on the
round laid out without dropouts; a client that goes off line after its training reply is not a dropout; a
round in which every sampled client goes off line is refused (the model times a stage by its replies, and
such a round has none).
"""

from __future__ import annotations

import copy
import math

from fedbw.config import ExperimentConfig
from fedbw.errors import ConfigError
from fedbw.plan import Plan, build_plan
from fedbw.privacy.randomness import python_rng


def with_availability(plan: Plan) -> Plan:
    """``plan`` with its cohorts drawn from the clients on line (module docstring); unchanged without
    ``clients.availability``. ConfigError when a round would start after the availability trace ends."""
    cfg = plan.config
    av = cfg.clients.availability
    if av is None:
        return plan
    from fedbw.engines.estimate import estimate_round

    total = cfg.clients.total
    availability = av.load(total, cfg.seed)
    if (extra := [c for c in availability.clients if c >= total]):
        raise ConfigError(f"clients.availability: the trace names client {extra[0]}, but clients are "
                          f"0..{total - 1}")
    k = plan.sampler.per_round
    training = plan.dropout_stage
    clock = plan.deployment_clock()
    plan.round_starts_s, plan.online, plan.offline = [], [], []
    t = av.start_s
    for r in range(1, plan.rounds + 1):
        if t >= availability.horizon_s:
            raise ConfigError(f"clients.availability: round {r} would start at {t:,.0f} s, after the trace ends "
                              f"({availability.horizon_s:,.0f} s); use fewer rounds, a longer horizon_h or an "
                              f"earlier start_s")
        online = [c for c in availability.online_clients(t) if c < total]
        rng = python_rng(cfg.privacy.randomness, cfg.seed, "available-sample", r)
        cohort = sorted(rng.sample(online, min(k, len(online))))
        plan.samples[r - 1] = cohort
        plan.round_starts_s.append(t)
        plan.online.append(len(online))
        plan.offline.append([])
        if cohort:
            # the round without dropouts, on a copy of the clock: when would each client's training reply be in?
            first = estimate_round(plan, r, clock=copy.deepcopy(clock))
            before = sum(first.stage_time_s(s) for s in first.stages[:first.stages.index(training)])
            replies = {x.client_id: t + before + x.t_total_s for x in first.timings if x.stage == training}
            plan.offline[r - 1] = [c for c in cohort
                                   if (availability.online_until(c, t) or t) < replies.get(c, math.inf)]
            if len(plan.offline[r - 1]) == len(cohort):
                raise ConfigError(f"clients.availability: every client sampled in round {r} goes off line before "
                                  f"its reply, and the model cannot time a round without a reply yet (Flower "
                                  f"waits for their heartbeats to lapse); sample more clients per round or use "
                                  f"an availability with longer on-line times")
        duration = estimate_round(plan, r, clock=clock).round_time_s if cohort else 0.0
        # a round nobody could join: the server tries again a poll interval later
        t += duration if cohort else (plan.costs.serverapp_poll_s if plan.costs is not None else 1.0)
    return _with_epsilons_of_the_cohorts(plan)


def _with_epsilons_of_the_cohorts(plan: Plan) -> Plan:
    """ε after each round for the cohorts the server will aggregate (the clients on line, less the dropouts),
    and the rounds that fit ``privacy.dp.max_epsilon`` with them: build_plan's budget assumed full cohorts."""
    from fedbw.privacy.accounting import plan_budget
    from fedbw.privacy.rounds import aggregated

    budget = plan_budget(plan.config.privacy.dp, plan.sampler, plan.rounds, lambda r: aggregated(plan, r))
    if budget.epsilons is None:
        return plan
    if budget.rounds == 0:
        raise ConfigError(f"privacy.dp.max_epsilon = {plan.config.privacy.dp.max_epsilon:g} is below the ε of round 1 "
                          f"for the cohort the server aggregates then (fewer clients on line than per_round, or a "
                          f"dropout); raise max_epsilon or add noise")
    if budget.rounds < plan.rounds:
        plan.rounds, plan.stop_reason = budget.rounds, budget.stop_reason
        for per_round in (plan.round_starts_s, plan.online, plan.offline):
            del per_round[budget.rounds:]
    plan.epsilons = budget.epsilons
    return plan


def planned(cfg: ExperimentConfig, device: str | None = None) -> Plan:
    """The plan every engine runs: :func:`fedbw.plan.build_plan`, its cohorts then drawn from the clients on
    line (:func:`with_availability`), and refused with one line where ``cfg.engine`` cannot run what it
    planned (ConfigError, before any run directory or process exists)."""
    plan = with_availability(build_plan(cfg, device=device))
    if plan.offline is None or not any(plan.offline):
        return plan
    gone = {r + 1: ids for r, ids in enumerate(plan.offline) if ids}
    # emulate stops a dropped client's SuperNode and starts a fresh one that registers under a new node id; an
    # authenticated SuperNode keeps its key's node id, which the SuperLink holds until the old one's heartbeat
    # lapses, so that is not tried
    if cfg.engine == "emulate" and cfg.emulate.supernode_auth:
        for r, ids in gone.items():
            for later in range(r + 1, plan.rounds + 1):
                if back := sorted(set(ids) & set(plan.sampled_clients(later))):
                    raise ConfigError(f"clients.availability: client {back[0]} goes off line in round {r} and is "
                                      f"sampled again in round {later}; with emulate.supernode_auth a dropped "
                                      f"client cannot come back (its key's node id stays taken). Turn "
                                      f"supernode_auth off, or use fewer rounds or an availability in which "
                                      f"dropped clients stay away")
    return plan
