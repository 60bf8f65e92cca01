"""The analytic engine: the network model applied to the plan, instantly and at any scale.

It also answers the comparison questions directly — the same model on other uplink profiles and on
data-center fabrics — because those need no run at all.
"""

from __future__ import annotations

from typing import Callable

from fedbw import catalog
from fedbw.engines.base import NoProgress, Progress, RunResult, records_from_timeline
from fedbw.errors import ConfigError
from fedbw.links import profile_link
from fedbw.netmodel import ClientLink, DeploymentClock, best_allreduce, round_timeline
from fedbw.netmodel.timeline import RoundTimeline
from fedbw.plan import Plan, collection_paused
from fedbw.privacy.accounting import accountant_for
from fedbw.privacy.rounds import account_round, privacy_round, released_cohort
from fedbw.results.records import RecordWriter
from fedbw.results.estimates import FabricEstimate, ProfileEstimate


def estimate_round(plan: Plan, round_index: int, client_ids: list[int] | None = None,
                   link_of: Callable[[int], ClientLink] | None = None,
                   clock: DeploymentClock | None = None) -> RoundTimeline:
    """The timeline of one round; ``link_of(cid)`` may replace each client's link (profile sweeps).

    With ``clock`` (a plan's :meth:`~fedbw.plan.Plan.deployment_clock`, carried from round to round)
    the round includes Flower's deployment costs; the shared server link always applies.
    """
    ids = plan.sampled_clients(round_index) if client_ids is None else client_ids
    clients = plan.clients
    if link_of is None:
        rows = [(cid, (c := clients[cid]).access.model(), c.est_compute_s) for cid in ids]
    else:
        rows = [(cid, link_of(cid), clients[cid].est_compute_s) for cid in ids]
    exchanges = plan.predicted_exchanges(round_index)
    opts = plan.timeline_options(round_index)
    dropped = opts.get("dropped")
    if dropped is None or clock is None:
        opts.pop("dropped", None)
        return round_timeline(rows, exchanges, deployment=clock, **opts)
    # dropouts (SecAgg+'s, availability's): their exchanges end before the stage they miss
    cut = dropped.cut(exchanges)
    return round_timeline(rows, lambda cid: cut if cid in dropped.clients else exchanges, deployment=clock, **opts)


def steady_timeline(plan: Plan, client_ids: list[int] | None = None,
                    link_of: Callable[[int], ClientLink] | None = None) -> RoundTimeline:
    """The steady round's timeline (:func:`steady_round`), the rounds before it laid on the same clock."""
    clock = plan.deployment_clock()
    r = steady_round(plan)
    for earlier in range(1, r):
        estimate_round(plan, earlier, client_ids, link_of, clock)
    return estimate_round(plan, r, client_ids, link_of, clock)


def run_estimate(plan: Plan, run_id: str, writer: RecordWriter | None = None,
                 progress: Progress = NoProgress) -> RunResult:
    result = RunResult(run_dir=writer.path.parent if writer else None, plan=plan)
    # the privacy budget's stop comes with the plan, as the server reads it; ε is accounted round by round
    # for the updates that came in time, by the server's rule
    result.stopped_early = plan.stop_reason
    clock = plan.deployment_clock()
    accountant = accountant_for(plan.config.privacy.dp, plan.sampler)
    for r in range(1, plan.rounds + 1):
        with collection_paused():  # a round's rows and records: many small objects, no cycles
            timeline = estimate_round(plan, r, clock=clock)
            gone = timeline.late_ids.union(plan.dropped(r))
            counted = [cid for cid in plan.sampled_clients(r) if cid not in gone]
            clients, rnd = records_from_timeline(
                plan, run_id, "estimate", r, timeline,
                epsilon=None if accountant is None else account_round(accountant, plan, r, counted),
                privacy=privacy_round(plan.config.privacy, plan.sampler, released_cohort(plan, counted)))
            lost = gone if plan.config.privacy.secagg.enabled else set()
            if lost:  # who dropped or came late, and the chance Flower completes such a round
                if dropped := plan.secagg_dropped(r):
                    rnd.extra["secagg_dropped"] = dropped
                rnd.extra["secagg_completes"] = secagg_completes(plan, r, len(lost))
        result.clients += clients
        result.rounds.append(rnd)
        if writer:
            writer.write([*clients, rnd])
        progress(r, len(clients), len(clients))
    return result


def secagg_completes(plan: Plan, round_index: int, lost: int) -> float:
    """The chance Flower's SecAgg+ completes round ``round_index`` when ``lost`` of its clients are gone after
    the share exchange (its planned SecAgg+ dropouts, and the clients late at the round's deadline or left
    out by over-selection), by its threshold rule on a shuffled ring (:mod:`fedbw.privacy.secagg_dropouts`)."""
    from fedbw.privacy.secagg_dropouts import completion_probability

    sa, n = plan.config.privacy.secagg, len(plan.sampled_clients(round_index))
    return completion_probability(n, sa.shares(n), sa.reconstruction_threshold, lost, seed=plan.config.seed)


def steady_round(plan: Plan) -> int:
    """Round 2 when there is one (stock SecAgg+ only shows its float64 downloads from then on), else the
    next round that samples anyone (a Poisson round can be empty); ConfigError if none does."""
    first = min(2, plan.rounds)
    for r in [*range(first, plan.rounds + 1), *range(1, first)]:
        if plan.sampled_clients(r):
            return r
    raise ConfigError(f"no client is sampled in any of the {plan.rounds} round(s); raise clients.per_round "
                      f"or the number of rounds")


def estimate_profiles(plan: Plan, profiles: list[str]) -> list[ProfileEstimate]:
    out = []
    ids = plan.sampled_clients(steady_round(plan))
    for name in profiles:
        access = profile_link(name)
        link = access.model()
        tl = steady_timeline(plan, ids, link_of=lambda cid: link)
        first = tl.client_rows(ids[0])
        q = tl.round_quantiles_s
        out.append(ProfileEstimate(
            profile=name, up_mbps=access.up_mbps, down_mbps=access.down_mbps,
            bytes_up_per_client=sum(t.bytes_up for t in first), bytes_down_per_client=sum(t.bytes_down for t in first),
            t_down_s=sum(t.t_down_s for t in first), t_compute_s=sum(t.t_compute_s for t in first),
            t_up_s=sum(t.t_up_s for t in first), t_framework_s=tl.framework_time_s, round_time_s=tl.round_time_s,
            comm_fraction=tl.comm_fraction, bandwidth_bound=tl.bandwidth_bound,
            round_interval_s=None if q is None else (q[0], q[2])))
    return out


def estimate_fabrics(params: int, fabrics: list[str], ranks: int, bytes_per_value: int = 4) -> list[FabricEstimate]:
    """One AllReduce of the full gradient (``bytes_per_value`` per parameter) on each fabric."""
    out = []
    size = params * bytes_per_value
    for name in fabrics:
        f = catalog.get_fabric(name)
        e = best_allreduce(size, ranks, f.busbw_gbps, f.alpha_us * 1e-6)
        out.append(FabricEstimate(name, f.description, ranks, size, e.algorithm, e.time_s, e.algbw_gbps, e.busbw_gbps))
    return out
