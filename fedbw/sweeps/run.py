"""Running a grid sweep: one run of ``fedbw run`` per point, each in its own run directory, resumable.

Why every point goes through :func:`fedbw.runner.run_experiment`: a point's directory is then exactly
what ``fedbw run`` leaves (records, summary.json, plots), so ``fedbw report`` and ``fedbw compare`` read
a point like any run, on any engine. Every point's config is validated and planned before the first
one runs, so a typo in the grid fails in a second, not after an hour of other points.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from fedbw.config import ExperimentConfig, load_config
from fedbw.errors import ConfigError, FedbwError
from fedbw.results.sweep_index import GridAxis
from fedbw.sweeps.grid import grid_points, parse_grid, point_sets
from fedbw.results.sweep_index import GridPoint, SweepIndex, is_sweep_dir, read_index, write_index
from fedbw.tomlvalue import format_value


class SweepObserver(Protocol):
    """What a sweep tells whoever shows its progress (the CLI's bar); it never prints itself."""

    def point_started(self, point: GridPoint, position: int, todo: int) -> None: ...

    def round_progress(self, round_index: int, clients_done: int, clients_total: int) -> None: ...

    def point_finished(self, point: GridPoint) -> None: ...


class _Silent:
    def point_started(self, point: GridPoint, position: int, todo: int) -> None:
        pass

    def round_progress(self, round_index: int, clients_done: int, clients_total: int) -> None:
        pass

    def point_finished(self, point: GridPoint) -> None:
        pass


@dataclass
class PreparedSweep:
    """A sweep ready to run: its directory, its index and every point's validated config."""

    sweep_dir: Path
    index: SweepIndex
    configs: dict[int, ExperimentConfig]  #: by point index
    #: per point, what a real Flower deployment of it would lose before timing matters (replies Flower's
    #: object-push session drops, fedbw.flower_limits): said before anything runs
    notes: list[str] = field(default_factory=list)

    @property
    def todo(self) -> list[GridPoint]:
        """Points still to run: everything not done (an interrupted or failed point runs again)."""
        return [p for p in self.index.points if p.status != "done"]


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _point_config(config: Path, sets: list[str], engine_sets: list[str], point: GridPoint, name: str,
                  sweep_dir: Path) -> ExperimentConfig:
    own = [f"output_dir={format_value(str(sweep_dir))}", f"name={format_value(f'{name}-p{point.index}')}"]
    try:
        return load_config(config, [*sets, *engine_sets, *point_sets(point.overrides), *own])
    except ConfigError as exc:
        raise ConfigError(f"sweep point {point.index} ({point.label}): {exc}") from None


def prepare_sweep(config: Path, grid: list[str], sets: list[str], engine: str | None = None, *,
                  resume: Path | None = None, command: str = "") -> PreparedSweep:
    """A new sweep directory under the config's output_dir, or ``resume``'s, with every point checked.

    Resuming refuses a different config file content, --set list, engine or grid: the points already
    done would otherwise silently answer another question.
    """
    from fedbw.engines.cohorts import planned
    from fedbw.results.rundir import fresh_stamped_dir

    base = load_config(config, sets)
    axes = parse_grid(grid) if grid else []
    if engine is not None and any(a.key == "engine" for a in axes):
        raise ConfigError("give the engine either with --engine or in --grid engine=..., not both")
    engine_sets = [f"engine={format_value(engine)}"] if engine is not None else []
    effective_engine = engine or base.engine
    if resume is not None:
        if not is_sweep_dir(resume):
            raise ConfigError(f"--resume {resume}: not a sweep directory (no sweep.json); pass the directory "
                              f"`fedbw sweep` printed")
        index = read_index(resume)
        _check_same_sweep(index, config, sets, effective_engine, axes)
        sweep_dir = Path(resume)
    else:
        if not axes:
            raise ConfigError("give at least one --grid key=v1,v2 (or --param with --values/--range)")
        index = SweepIndex(base.name, str(config), _sha256(config), effective_engine, list(sets), axes,
                           [GridPoint(i + 1, o) for i, o in enumerate(grid_points(axes))], _utc(), command)
        sweep_dir = None  # created once every point has been checked
    configs, notes = {}, []
    for p in index.points:
        cfg = _point_config(config, sets, engine_sets, p, index.name, sweep_dir or Path(base.output_dir))
        try:
            plan = planned(cfg)
        except ConfigError as exc:
            raise ConfigError(f"sweep point {p.index} ({p.label}): {exc}") from None
        configs[p.index] = cfg
        notes += [f"sweep point {p.index} ({p.label}): {note}" for note in plan.lost_replies()]
    if sweep_dir is None:
        sweep_dir = fresh_stamped_dir(Path(base.output_dir), f"{base.name}-sweep")
        configs = {i: c.model_copy(update={"output_dir": str(sweep_dir)}) for i, c in configs.items()}
        write_index(sweep_dir, index)
    return PreparedSweep(sweep_dir, index, configs, notes)


def _check_same_sweep(index: SweepIndex, config: Path, sets: list[str], engine: str, axes: list[GridAxis]) -> None:
    where = "--resume: the sweep was made"
    if index.config_sha256 != _sha256(config):
        raise ConfigError(f"{where} from {index.config} as it was then; {config} differs now. Restore it, or "
                          f"start a new sweep (without --resume)")
    if list(index.sets) != list(sets):
        raise ConfigError(f"{where} with --set {index.sets or '(none)'}, not {sets or '(none)'}; give the same")
    if index.engine != engine:
        raise ConfigError(f"{where} with engine {index.engine!r}, not {engine!r}; give --engine {index.engine}")
    if axes and [a.to_json() for a in axes] != [a.to_json() for a in index.grid]:
        grid = " ".join(f"--grid {a.key}=" + ",".join(map(format_value, a.values)) for a in index.grid)
        raise ConfigError(f"{where} with {grid}; give the same grid (or none: --resume reuses it)")


def run_prepared(prepared: PreparedSweep, observer: SweepObserver | None = None) -> SweepIndex:
    """Run every point not done yet, rewriting sweep.json at each change; a failed point (a FedbwError)
    is recorded and the sweep goes on; Ctrl-C marks the running point interrupted and stops."""
    from fedbw.runner import run_experiment

    obs = observer or _Silent()
    todo = prepared.todo
    for position, point in enumerate(todo, start=1):
        _mark_running(prepared, point)
        obs.point_started(point, position, len(todo))
        before = _subdirs(prepared.sweep_dir)
        t0 = time.perf_counter()
        try:
            result = run_experiment(prepared.configs[point.index], obs.round_progress)
        except BaseException as exc:
            point.run_dir = _new_dir(prepared.sweep_dir, before) or point.run_dir
            point.status = "failed" if isinstance(exc, (FedbwError, Exception)) else "interrupted"
            point.error = f"{type(exc).__name__}: {exc}".strip(": ") if point.status == "failed" else "interrupted"
            _mark_ended(prepared, point, time.perf_counter() - t0)
            obs.point_finished(point)
            if isinstance(exc, FedbwError):
                continue
            raise
        point.run_dir = result.run_dir.name if result.run_dir else _new_dir(prepared.sweep_dir, before)
        point.status, point.error, point.stopped_early = "done", None, result.stopped_early
        _mark_ended(prepared, point, time.perf_counter() - t0)
        obs.point_finished(point)
    return prepared.index


def _mark_running(prepared: PreparedSweep, point: GridPoint) -> None:
    if point.run_dir and point.status in ("interrupted", "failed", "running"):
        point.previous_run_dirs.append(point.run_dir)
    point.status, point.run_dir, point.error, point.stopped_early = "running", None, None, None
    point.attempts += 1
    point.started_utc, point.finished_utc, point.pid = _utc(), None, os.getpid()
    write_index(prepared.sweep_dir, prepared.index)


def _mark_ended(prepared: PreparedSweep, point: GridPoint, wall_s: float) -> None:
    point.finished_utc, point.wall_s, point.pid = _utc(), wall_s, None
    write_index(prepared.sweep_dir, prepared.index)


def _subdirs(path: Path) -> set[str]:
    return {p.name for p in Path(path).iterdir() if p.is_dir()}


def _new_dir(path: Path, before: set[str]) -> str | None:
    """The run directory a point created (found by name, when the run failed before returning it)."""
    new = sorted(_subdirs(path) - before)
    return new[-1] if new else None


def check_not_running(index: SweepIndex, sweep_dir: Path) -> None:
    """Refuse to resume a sweep another live process is still running."""
    import psutil

    for p in index.points:
        if p.status == "running" and p.pid and p.pid != os.getpid() and psutil.pid_exists(p.pid):
            raise ConfigError(f"{sweep_dir}: point {p.index} is being run by process {p.pid}; wait for it, or "
                              f"stop it, before --resume")


def sweep(config: Path, grid: list[str], sets: list[str], engine: str | None = None, *,
          resume: Path | None = None, observer: SweepObserver | None = None,
          command: str = "", on_prepared: Callable[[PreparedSweep], Any] | None = None) -> tuple[Path, SweepIndex]:
    """Prepare (or resume) and run a sweep; returns its directory and final index."""
    prepared = prepare_sweep(config, grid, sets, engine, resume=resume, command=command)
    if resume is not None:
        check_not_running(prepared.index, prepared.sweep_dir)
    if on_prepared is not None:
        on_prepared(prepared)
    return prepared.sweep_dir, run_prepared(prepared, observer)
