"""Every run's one path: config (or an app) → plan → run directory → engine → records → summary and plots.

``fedbw run`` calls :func:`run_experiment`; ``fedbw emulate --app`` and ``fedbw simulate --app`` call
:func:`run_app`. Both go through :func:`run_in`: the run directory's metadata (once), the records writer
(its header says which model made a model engine's numbers), the engine, and, whatever happens, the
summary and plots of the rounds that finished — so ``fedbw report`` and ``fedbw compare`` read an app's
run like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from fedbw.config import ExperimentConfig
from fedbw.engines.base import NoProgress, Progress, RunResult
from fedbw.errors import ConfigError
from fedbw.engines.cohorts import planned
from fedbw.plan import Plan
from fedbw.results.records import ClientRoundRecord, RecordWriter, RoundRecord, load_records
from fedbw.results.rundir import fresh_stamped_dir, new_run_dir, write_run_metadata


class _Finished(Protocol):
    clients: list[ClientRoundRecord]
    rounds: list[RoundRecord]


R = TypeVar("R", bound=_Finished)


def run_experiment(cfg: ExperimentConfig, progress: Progress = NoProgress) -> RunResult:
    """Run ``cfg`` on its engine; records land in a fresh run directory as each round ends."""
    from fedbw.device import describe_device, resolve_device

    # the analytic engine trains nothing (and never imports torch)
    device = resolve_device(cfg.device) if cfg.engine != "estimate" else None
    plan = planned(cfg, device=device)
    run_dir = new_run_dir(cfg, cfg.engine)

    def execute(writer: RecordWriter) -> RunResult:
        result = _run_engine(cfg, plan, run_dir.name, writer, progress)
        result.run_dir = run_dir
        return result

    return run_in(run_dir, plan, execute, device=describe_device(device) if device else None, allreduce=True)


def run_app(app_dir: Path, num_clients: int, profile: str, *, engine: Literal["emulate", "simulate"],
            out_dir: Path | None = None, progress: Progress = NoProgress, **options: Any) -> Any:
    """Any Flower app, unmodified, on ``engine`` with ``num_clients`` SuperNodes on ``profile`` links, in
    ``out_dir`` (default ``runs/<app>-<engine>-<UTC stamp>``). ``options`` are the engine's: for emulate
    :func:`fedbw.engines.emulate.foreign.prepare_app`'s, for simulate
    :func:`fedbw.engines.simulate.foreign.prepare_app_simulation`'s. Returns the engine's app result
    (``AppRun`` / ``AppSimulation``)."""
    prepare: Callable[..., Any]
    execute: Callable[..., Any]
    if engine == "emulate":
        from fedbw.engines.emulate.foreign import execute_app as execute
        from fedbw.engines.emulate.foreign import prepare_app as prepare
    elif engine == "simulate":
        from fedbw.engines.simulate.foreign import execute_app_simulation as execute
        from fedbw.engines.simulate.foreign import prepare_app_simulation as prepare
    else:
        raise ConfigError(f"an app runs on emulate or simulate, not {engine!r}")
    app = prepare(app_dir, num_clients, profile, **options)
    run_dir = Path(out_dir) if out_dir is not None else fresh_stamped_dir(Path("runs"), f"{app.app_dir.name}-{engine}")
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_in(run_dir, app.plan, lambda writer: execute(app, run_dir, writer, progress), device="cpu")


def run_in(run_dir: Path, plan: Plan, execute: Callable[[RecordWriter], R], *, device: str | None = None,
           allreduce: bool = False) -> R:
    """The one path every run takes once its plan and directory exist: the metadata, ``allreduce.json``
    (``allreduce``: a config run, whose model is known), the records writer for ``execute``, and, whatever
    happens, the summary and plots of the rounds that finished."""
    cfg = plan.config
    write_run_metadata(run_dir, cfg, device=device)
    if allreduce:
        _record_allreduce(run_dir, cfg, plan)
    try:
        with RecordWriter(run_dir / "records.jsonl", run_id=run_dir.name, engine=cfg.engine,
                          model=plan.model_stamp() if cfg.engine != "emulate" else None) as writer:
            result = execute(writer)
    except BaseException as exc:
        # failed or interrupted: the finished rounds are on disk; summarise and plot them anyway,
        # without ever hiding the original error behind one from the summary
        try:
            _finish(run_dir, cfg, *load_records(run_dir), stopped_early=f"{type(exc).__name__}: {exc}".strip(": "))
        except Exception:  # noqa: BLE001
            pass
        raise
    _finish(run_dir, cfg, result.clients, result.rounds, getattr(result, "stopped_early", None))
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
