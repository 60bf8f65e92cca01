"""Run a study: each variant once on its engine, then one row per (variant, profile)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from fedbw.config import config_from_dict, config_to_dict
from fedbw.engines.base import NoProgress, Progress, RunResult
from fedbw.errors import FedbwError, RunError
from fedbw.netmodel.timeline import BANDWIDTH_BOUND_FRACTION
from fedbw.links import profile_link
from fedbw.studies.retime import RoundTraffic, retime, traffic_from_plan, traffic_from_run_dir
from fedbw.results.study import StudyResult, StudyRow
from fedbw.config.study import Study, Variant
from fedbw.tomlvalue import format_value


def new_study_dir(output_dir: str, name: str) -> Path:
    """``<output_dir>/<name>-<UTC stamp>`` (suffixed if it exists)."""
    from fedbw.results.rundir import fresh_stamped_dir

    return fresh_stamped_dir(Path(output_dir), name)


def privacy_columns(run: RunResult) -> dict[str, object]:
    """ε's sampling, adjacency and δ (from the records, else the plan: they follow from the config) and
    SecAgg+'s clipped and wrapped counts summed over the rounds (only runs measure them)."""
    from fedbw.privacy.rounds import planned_privacy_round

    records = [r.privacy for r in run.rounds if r.privacy is not None]
    context = records[-1] if records else (planned_privacy_round(run.plan, 1) if run.plan is not None else None)
    out: dict[str, object] = {}
    if context is not None and context.delta is not None:
        out.update(epsilon_delta=context.delta, epsilon_sampling=context.sampling,
                   epsilon_adjacency=context.adjacency)
    for key in ("secagg_clipped", "secagg_wrapped"):
        counts = [getattr(p, key) for p in records if getattr(p, key) is not None]
        if counts:
            out[key] = sum(counts)
    return out


def profile_rows(v: Variant, traffic: list[RoundTraffic], profiles: list[str], run: RunResult) -> list[StudyRow]:
    """Re-time every round of one variant on each profile and average its steady-state rounds."""
    traffic = [t for t in traffic if t.clients]  # a Poisson round may sample nobody: nothing to re-time
    if not traffic:
        raise RunError(f"variant {v.name}: the run finished no round, so there is nothing to re-time")
    steady = [t for t in traffic if t.round >= 2] or traffic
    last = run.rounds[-1] if run.rounds else None
    privacy = privacy_columns(run)
    ups, downs = zip(*(t.bytes_per_client() for t in steady))
    per_stage = _mean_bytes_per_stage(steady)
    completes = [c for rnd in run.rounds if rnd.round in {t.round for t in steady}
                 and (c := rnd.extra.get("secagg_completes")) is not None]
    rows = []
    for profile in profiles:
        link = profile_link(profile).model()
        # one clock per re-timed run (poll grids carry over rounds); no plan: the links alone
        clock = run.plan.deployment_clock() if run.plan is not None else None
        timed = [(t, retime(t, link, run.plan, clock)) for t in traffic]
        first = timed[0][1]
        tls = [tl for t, tl in timed if t in steady]
        total = sum(tl.round_time_s for tl in tls)
        comm = sum(tl.comm_time_s for tl in tls)
        frac = comm / total if total > 0 else 0.0
        spreads = [q for tl in tls if (q := tl.round_quantiles_s) is not None]
        interval = ((sum(q[0] for q in spreads) / len(spreads), sum(q[2] for q in spreads) / len(spreads))
                    if spreads and len(spreads) == len(tls) else None)
        rows.append(StudyRow(
            variant=v.name, kind=v.kind or v.name, cell=dict(v.cell), profile=profile, rounds=len(traffic),
            steady_rounds=[t.round for t in steady],
            bytes_up_per_client=sum(ups) / len(ups), bytes_down_per_client=sum(downs) / len(downs),
            round1_time_s=first.round_time_s, round_time_s=total / len(tls), comm_time_s=comm / len(tls),
            compute_time_s=sum(tl.compute_time_s for tl in tls) / len(tls),
            framework_time_s=sum(tl.framework_time_s for tl in tls) / len(tls), comm_fraction=frac,
            framework_parts_s=_mean_parts([tl.framework_parts_s for tl in tls]),
            bandwidth_bound=frac > BANDWIDTH_BOUND_FRACTION, round_interval_s=interval,
            epsilon=None if last is None else last.epsilon, accuracy=None if last is None else last.accuracy,
            loss=None if last is None else last.loss, bytes_per_stage=per_stage,
            round_completes=sum(completes) / len(completes) if completes else None, **privacy))
    return rows


def _mean_bytes_per_stage(traffic: list[RoundTraffic]) -> dict[str, tuple[float, float]]:
    """Per stage (in the order the rounds ran them), the (down, up) bytes of a sampled client: the mean over
    the rounds' clients, a stage a client skipped counting as 0 for it."""
    sums: dict[str, list[float]] = {}
    clients = 0
    for t in traffic:
        for cid in t.clients:
            clients += 1
            for m in t.exchanges[cid]:
                acc = sums.setdefault(m.stage, [0.0, 0.0])
                acc[0] += m.bytes_down
                acc[1] += m.bytes_up
    return {stage: (down / clients, up / clients) for stage, (down, up) in sums.items()} if clients else {}


def _mean_parts(parts: list[dict[str, float]]) -> dict[str, float]:
    """Each part's mean over the rounds (a part a round lacks counts as 0 there)."""
    keys = sorted({k for p in parts for k in p})
    return {k: sum(p.get(k, 0.0) for p in parts) / len(parts) for k in keys} if parts else {}


def set_ratios(rows: list[StudyRow], baseline: str) -> None:
    """Each row's uplink bytes and round time against the baseline variant's in the same grid cell and on
    the same profile (the overhead a variant adds where everything else is equal)."""
    def key(r: StudyRow) -> tuple[str, str]:
        return repr(sorted(r.cell.items())), r.profile

    base = {key(r): r for r in rows if r.variant_kind == baseline}
    for r in rows:
        b = base.get(key(r))
        r.uplink_ratio = r.bytes_up_per_client / b.bytes_up_per_client if b and b.bytes_up_per_client else None
        r.round_ratio = r.round_time_s / b.round_time_s if b and b.round_time_s else None


def _run_variant(v: Variant, study_dir: Path, progress: Progress) -> RunResult:
    from fedbw.runner import run_experiment

    cfg = config_from_dict(config_to_dict(v.config), [f"name={format_value(v.name)}",
                                                      f"output_dir={format_value(str(study_dir))}"],
                           source=f"variant {v.name}")
    return run_experiment(cfg, progress)


def run_study(study: Study, progress: Progress = NoProgress,
              on_variant: Callable[[int, int, Variant], None] = lambda i, n, v: None,
              command: str | None = None) -> StudyResult:
    """Run every variant, re-time it on every profile, write study.json, study.md and study.png."""
    from fedbw.report.study import write_outputs

    result = StudyResult(study, new_study_dir(study.output_dir, study.name),
                         started_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), command=command)
    for i, v in enumerate(study.variants):
        on_variant(i, len(study.variants), v)
        try:
            run = _run_variant(v, result.study_dir, progress)
        except FedbwError as exc:
            raise type(exc)(f"study {study.name}, variant {v.name}: {exc}") from None
        assert run.run_dir is not None
        result.run_dirs[v.name] = run.run_dir
        if run.stopped_early:
            result.stopped_early[v.name] = run.stopped_early
        assert run.plan is not None
        stamp = run.plan.model_stamp()  # the variants share the model; a variant may name its own calibration
        if result.made_by and result.made_by.get("calibration") != stamp["calibration"]:
            stamp = {**stamp, "calibration": "per variant (their run directories' records)"}
        result.made_by = stamp
        traffic = (traffic_from_run_dir(run.run_dir) if v.config.engine == "simulate"
                   else traffic_from_plan(run.plan, len(run.rounds)))
        result.rows += profile_rows(v, traffic, study.profiles, run)
    set_ratios(result.rows, study.baseline)
    result.files = write_outputs(result)
    return result
