"""config → plan → engine → records: the one function ``fedbw run`` calls."""

from __future__ import annotations

from fedbw.config import ExperimentConfig
from fedbw.engines.base import NoProgress, Progress, RunResult
from fedbw.errors import ConfigError
from fedbw.plan import build_plan
from fedbw.results.records import RecordWriter
from fedbw.results.rundir import new_run_dir, write_run_metadata


def run_experiment(cfg: ExperimentConfig, progress: Progress = NoProgress) -> RunResult:
    """Run ``cfg`` on its engine; records land in a fresh run directory as each round ends."""
    plan = build_plan(cfg)
    run_dir = new_run_dir(cfg, cfg.engine)
    run_id = run_dir.name
    write_run_metadata(run_dir, cfg, device=None)
    with RecordWriter(run_dir / "records.jsonl") as writer:
        if cfg.engine == "estimate":
            from fedbw.engines.estimate import run_estimate

            result = run_estimate(plan, run_id, writer, progress)
        elif cfg.engine == "simulate":
            from fedbw.engines.simulate import run_simulate

            result = run_simulate(plan, run_id, writer, progress)
        elif cfg.engine == "emulate":
            from fedbw.engines.emulate import run_emulate

            result = run_emulate(plan, run_id, writer, progress)
        else:  # pragma: no cover - pydantic restricts engine
            raise ConfigError(f"unknown engine {cfg.engine!r}")
    result.run_dir = run_dir
    from fedbw.results.plots import plot_run
    from fedbw.results.summary import summarize, write_summary_json

    plot_run(run_dir, result.clients, result.rounds, f"{cfg.name} ({cfg.engine})")
    write_summary_json(run_dir, summarize(run_id, result.clients, result.rounds),
                       stopped_early=result.stopped_early)
    return result
