"""config → plan → engine → records: the one function ``fedbw run`` calls.

The runner resolves the device (once), builds the plan, writes the run directory's metadata (once),
runs the engine and, whatever happens, summarises and plots the rounds that finished.
"""

from __future__ import annotations

from pathlib import Path

from fedbw.config import ExperimentConfig
from fedbw.engines.base import NoProgress, Progress, RunResult
from fedbw.errors import ConfigError
from fedbw.plan import Plan, build_plan
from fedbw.results.records import RecordWriter, load_records
from fedbw.results.rundir import new_run_dir, write_run_metadata


def run_experiment(cfg: ExperimentConfig, progress: Progress = NoProgress) -> RunResult:
    """Run ``cfg`` on its engine; records land in a fresh run directory as each round ends."""
    from fedbw.device import describe_device, resolve_device

    # the analytic engine trains nothing (and never imports torch)
    device = resolve_device(cfg.device) if cfg.engine != "estimate" else None
    plan = build_plan(cfg, device=device)
    run_dir = new_run_dir(cfg, cfg.engine)
    run_id = run_dir.name
    write_run_metadata(run_dir, cfg, device=describe_device(device) if device else None)
    _record_allreduce(run_dir, cfg, plan)
    try:
        with RecordWriter(run_dir / "records.jsonl", run_id=run_id, engine=cfg.engine,
                          model=plan.model_stamp() if cfg.engine != "emulate" else None) as writer:
            result = _run_engine(cfg, plan, run_id, writer, progress)
    except BaseException as exc:
        # failed or interrupted: the finished rounds are on disk; summarise and plot them anyway,
        # without ever hiding the original error behind one from the summary
        try:
            _finish(run_dir, cfg, *load_records(run_dir), stopped_early=f"{type(exc).__name__}: {exc}".strip(": "))
        except Exception:  # noqa: BLE001
            pass
        raise
    result.run_dir = run_dir
    _finish(run_dir, cfg, result.clients, result.rounds, result.stopped_early)
    return result


def _record_allreduce(run_dir: Path, cfg: ExperimentConfig, plan: Plan) -> None:
    """The data-center side of this run, estimated now and recorded: compare reads it, never re-estimates."""
    from fedbw.engines.estimate import estimate_fabrics
    from fedbw.results.compared import write_allreduce

    dc = cfg.datacenter
    write_allreduce(run_dir, plan.model.name,
                    estimate_fabrics(plan.model.params, dc.fabrics, dc.ranks, dc.grad_bytes_per_value))


def _run_engine(cfg: ExperimentConfig, plan: Plan, run_id: str, writer: RecordWriter,
                progress: Progress) -> RunResult:
    if cfg.engine == "estimate":
        from fedbw.engines.estimate import run_estimate

        return run_estimate(plan, run_id, writer, progress)
    if cfg.engine == "simulate":
        from fedbw.engines.simulate import run_simulate

        return run_simulate(plan, run_id, writer, progress)
    if cfg.engine == "emulate":
        from fedbw.engines.emulate import run_emulate

        return run_emulate(plan, run_id, writer, progress)
    raise ConfigError(f"unknown engine {cfg.engine!r}")  # pragma: no cover - pydantic restricts engine


def _finish(run_dir: Path, cfg: ExperimentConfig, clients: list, rounds: list, stopped_early: str | None) -> None:
    """summary.json and the plots, from whatever rounds finished."""
    from fedbw.report.plots import plot_run
    from fedbw.results.summary import summarize, write_summary_json

    plot_run(run_dir, clients, rounds, f"{cfg.name} ({cfg.engine})")
    write_summary_json(run_dir, summarize(run_dir.name, clients, rounds), stopped_early=stopped_early)
