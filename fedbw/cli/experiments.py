"""Commands that run experiment configs: validate, run, sweep, study."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from fedbw.cli.common import CalibrationOpt, RoundProgress, SetOpt, app, err, flag_overrides, friendly, load, out, warn


@app.command()
@friendly
def validate(config: Path = typer.Argument(..., help="experiment TOML"), set_: list[str] = SetOpt) -> None:
    """Check a config (or a study file) without running it; prints the resolved plan in one line."""
    from fedbw.config import read_toml
    from fedbw.engines.cohorts import planned

    if "study" in read_toml(config, "config", "ready configs are in experiments/"):
        return _validate_study(config, set_)
    cfg = load(config, set_)
    plan = planned(cfg)
    mix = ", ".join(f"{p}×{sum(c.profile == p for c in plan.clients)}" for p in plan.profiles_used)
    out.print(f"[green]ok[/] {config}: {cfg.name}, engine {cfg.engine}, model {plan.model.name} "
              f"({plan.model.params:,} params), {cfg.clients.per_round}/{cfg.clients.total} clients per round "
              f"over {cfg.training.rounds} rounds, links {mix}")
    warn(plan.lost_replies())


def _validate_study(path: Path, set_: list[str]) -> None:
    """A study file: every variant's config resolved and checked, as `fedbw study` would before running."""
    from fedbw.studies import load_study

    from fedbw.results.sweep_index import describe_value

    spec = load_study(path, set_)
    kinds = list(dict.fromkeys(v.kind or v.name for v in spec.variants))
    grid = "; ".join(f"{k} over {', '.join(describe_value(x) for x in vs)}" for k, vs in spec.grid.items())
    where = f" in every cell of {grid} ({len(spec.variants)} runs)" if spec.grid else ""
    out.print(f"[green]ok[/] {path}: study {spec.name}, engine {spec.engine}, {len(kinds)} variants "
              f"({', '.join(kinds)}){where} re-timed on {', '.join(spec.profiles)}", markup=True, highlight=False)


@app.command()
@friendly
def run(config: Path = typer.Argument(..., help="experiment TOML (see experiments/)"),
        set_: list[str] = SetOpt,
        engine: Optional[str] = typer.Option(None, "--engine", "-e", help="estimate | simulate | emulate"),
        calibration: Optional[Path] = CalibrationOpt,
        json_out: bool = typer.Option(False, "--json", help="print the round records as JSON"),
        ray_address: Optional[str] = typer.Option(
            None, "--ray-address", help='simulate on an existing Ray cluster: "auto" or its HOST:PORT '
                                        '(= --set simulate.ray_address=...; docs/multi-host.md)'),
        hosts: Optional[str] = typer.Option(
            None, "--hosts", help='emulate on "loopback" or "netns" (a network host per SuperLink and SuperNode; '
                                  'root) (= --set emulate.hosts=...; overrides the config; docs/multi-host.md)')) -> None:
    """Run an experiment config; records, config and environment go to a new run directory."""
    from fedbw.errors import ConfigError
    from fedbw.report.terminal import render_run
    from fedbw.runner import run_experiment
    from fedbw.tomlvalue import format_value

    ray_set = [] if ray_address is None else [f"simulate.ray_address={format_value(ray_address)}"]
    hosts_set = [] if hosts is None else [f"emulate.hosts={format_value(hosts.strip().lower())}"]
    cfg = load(config, [*set_, *ray_set, *hosts_set], engine, calibration)
    if ray_address is not None and cfg.engine != "simulate":
        raise ConfigError(f"--ray-address runs the simulate engine on a Ray cluster; this run's engine is "
                          f"{cfg.engine!r} (add --engine simulate)")
    if hosts is not None and cfg.engine != "emulate":
        raise ConfigError(f"--hosts places the emulate engine's processes; this run's engine is {cfg.engine!r} "
                          f"(add --engine emulate)")
    if cfg.engine == "emulate":  # a real deployment loses these replies too: say so before the long run
        from fedbw.engines.cohorts import planned

        warn(planned(cfg).lost_replies())
    with RoundProgress(cfg.training.rounds, cfg.clients.per_round, quiet=json_out) as progress:
        result = run_experiment(cfg, progress)
    if json_out:
        out.print_json(json.dumps([r.to_json() for r in result.rounds]))
    else:
        render_run(out, cfg, result)
    if result.plan is not None and cfg.engine != "emulate":  # on stderr, after the table: what it cannot show
        warn(result.plan.lost_replies())


GridOpt = typer.Option([], "--grid", "-g", help="key=v1,v2 (values in TOML syntax); repeat for more keys: every "
                      "combination runs, e.g. --grid network.profile=home-30,home-80 --grid training.rounds=2,4")


@app.command()
@friendly
def sweep(config: Path = typer.Argument(..., help="experiment TOML"),
          grid: list[str] = GridOpt,
          engine: Optional[str] = typer.Option(None, "--engine", "-e", help="estimate | simulate | emulate "
                                               "(default: the config's)"),
          resume: Optional[Path] = typer.Option(None, "--resume", help="a sweep directory to finish: done points "
                                                "are skipped, interrupted or failed ones rerun"),
          param: Optional[str] = typer.Option(None, "--param", help="one key to vary with the analytic engine "
                                              "(instant, no run directories): a config key or up_mbps, down_mbps, "
                                              "rtt_ms; with --engine simulate/emulate it becomes a --grid"),
          values: Optional[str] = typer.Option(None, "--values", help="with --param: comma-separated values"),
          range_: Optional[str] = typer.Option(None, "--range", help="with --param: start:stop:count (inclusive, "
                                               "evenly spaced)"),
          set_: list[str] = SetOpt,
          calibration: Optional[Path] = CalibrationOpt,
          json_out: bool = typer.Option(False, "--json", help="print the result as JSON (no progress bar)"),
          quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress, no table: print only the sweep "
                                     "directory")) -> None:
    """Run every combination of --grid values (one run directory per point, resumable), or vary one --param
    with the analytic engine and tabulate round time and comm share."""
    from fedbw.compare import LINK_PARAMS, run_sweep, sweep_values
    from fedbw.errors import ConfigError
    from fedbw.tomlvalue import format_value

    sets = [*set_, *flag_overrides(calibration=calibration)]
    if param is not None:
        if grid:
            raise ConfigError("give either --param with --values/--range or --grid key=v1,v2, not both")
        points = sweep_values(values, range_)
        if engine in (None, "estimate") and resume is None:
            from fedbw.report.terminal import render_sweep

            rows = run_sweep(config, param, points, sets)
            warn([f"{param} = {r.value}: {note}" for r in rows for note in r.lost_replies])
            if json_out:
                out.print_json(json.dumps([asdict(r) for r in rows]))
            elif quiet:
                pass
            else:
                render_sweep(out, param, rows)
            return
        if param in LINK_PARAMS:
            raise ConfigError(f"--param {param} is a shorthand of the analytic sweep; with --engine {engine} sweep "
                              f"a config key, e.g. --grid network.profile=home-30,home-80")
        grid = [f"{param}=" + ",".join(format_value(v) for v in points)]
    elif values is not None or range_ is not None:
        raise ConfigError("--values and --range go with --param; for runs use --grid key=v1,v2")
    _grid_sweep(config, grid, sets, engine, resume, json_out, quiet)


def _grid_sweep(config: Path, grid: list[str], sets: list[str], engine: Optional[str], resume: Optional[Path],
                json_out: bool, quiet: bool) -> None:
    import shlex

    from fedbw.compare import point_summaries
    from fedbw.errors import RunError
    from fedbw.report.terminal import render_grid_sweep
    from fedbw.sweeps import sweep as run_grid

    bar = SweepBar(quiet=json_out or quiet)
    try:
        with bar:
            sweep_dir, index = run_grid(config, grid, sets, engine, resume=resume, observer=bar,
                                        command=shlex.join(["fedbw", *sys.argv[1:]]), on_prepared=bar.prepared)
    except KeyboardInterrupt:
        if bar.sweep_dir is not None:
            err.print(f"[yellow]interrupted[/]: finished points are kept; go on with: fedbw sweep {config} "
                      f"--resume {bar.sweep_dir}")
        raise
    failed = [p for p in index.points if p.status != "done"]
    if json_out:
        out.print_json(json.dumps({"sweep_dir": str(sweep_dir), **index.to_json()}))
    elif quiet:
        out.print(str(sweep_dir), highlight=False)
    else:
        render_grid_sweep(out, sweep_dir, index, point_summaries(sweep_dir, index))
    if failed:
        raise RunError(f"{len(failed)} of {len(index.points)} sweep points did not finish "
                       f"({', '.join(f'{p.index}: {_first_line(p.error)}' for p in failed)}; the whole messages are "
                       f"in {sweep_dir}/sweep.json); rerun them with: fedbw sweep {config} --resume {sweep_dir}")


def _first_line(text: Optional[str]) -> str:
    """A point's error in one line (an engine's error may carry the last lines of its log)."""
    return (text or "").strip().splitlines()[0] if (text or "").strip() else "no error recorded"


class SweepBar:
    """Progress of a grid sweep on stderr: points done with the sweep's ETA, and the running point's rounds
    with its own ETA (from the rounds finished so far, then from the points finished)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.sweep_dir: Optional[Path] = None
        self._rounds: dict[int, int] = {}
        self._durations: list[float] = []
        self._todo = 0
        self._point = None
        self._t0 = 0.0

    def prepared(self, prepared) -> None:
        warn(prepared.notes)  # before any point runs, quiet or not: a point Flower could not finish
        self.sweep_dir = prepared.sweep_dir
        self._rounds = {i: c.training.rounds for i, c in prepared.configs.items()}
        todo = prepared.todo
        if not self.quiet:
            skipped = len(prepared.index.points) - len(todo)
            err.print(f"sweep: {prepared.sweep_dir} · {len(prepared.index.points)} points"
                      + (f", {skipped} already done" if skipped else ""), highlight=False)
            self._bar.update(self._points, total=len(todo))

    def __enter__(self) -> "SweepBar":
        if not self.quiet:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.fields[eta]}"), console=err, transient=True)
            self._bar.start()
            self._points = self._bar.add_task("points", total=None, eta="")
            self._current = self._bar.add_task("", total=1, eta="", visible=False)
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.quiet:
            self._bar.stop()

    def point_started(self, point, position: int, todo: int) -> None:
        import time

        self._point, self._todo, self._t0 = point, todo, time.perf_counter()
        if self.quiet:
            return
        rounds = self._rounds.get(point.index, 1)
        self._bar.update(self._points, completed=position - 1, description=f"point {position}/{todo}",
                         eta=self._sweep_eta(position, None))
        self._bar.reset(self._current, total=rounds, visible=True, description=f"  {point.label}", eta="")

    def round_progress(self, round_index: int, clients_done: int, clients_total: int) -> None:
        import time

        if self.quiet or self._point is None:
            return
        rounds = self._rounds.get(self._point.index, 1)
        finished = round_index if clients_done >= clients_total else round_index - 1
        partial = clients_done / clients_total if clients_total and finished < round_index else 0.0
        frac = min(1.0, (finished + partial) / max(rounds, 1))
        elapsed = time.perf_counter() - self._t0
        left = elapsed / frac * (1 - frac) if frac > 0 else None
        eta = "point: last round done, writing summary and plots" if frac >= 1 else _eta("point", left)
        self._bar.update(self._current, completed=finished, eta=eta,
                         description=f"  {self._point.label} · round {round_index}/{rounds}")
        position = self._bar.tasks[self._points].completed + 1
        self._bar.update(self._points, eta=self._sweep_eta(int(position), left))

    def point_finished(self, point) -> None:
        import time

        self._durations.append(time.perf_counter() - self._t0)
        if not self.quiet:
            self._bar.advance(self._points)
            if point.status != "done":
                err.print(f"[yellow]point {point.index} ({point.label}) {point.status}[/]: "
                          f"{escape(_first_line(point.error))}")

    def _sweep_eta(self, position: int, current_left: Optional[float]) -> str:
        """Points not started × the mean point so far (or the running point's projection), + the running one."""
        import time

        if self._durations:
            per_point = sum(self._durations) / len(self._durations)
        elif current_left is not None:
            per_point = time.perf_counter() - self._t0 + current_left
        else:
            return ""
        left = (self._todo - position) * per_point + (current_left if current_left is not None else per_point)
        return _eta("sweep", left)


def _eta(what: str, seconds: Optional[float]) -> str:
    from fedbw.report.format import fmt_s

    return "" if seconds is None else f"{what} ETA {fmt_s(max(seconds, 0.0))}"


@app.command()
@friendly
def study(file: Path = typer.Argument(..., help="study TOML: [base] config + [study] profiles and variants"),
          engine: Optional[str] = typer.Option(None, "--engine", "-e", help="simulate | estimate (default: the base's)"),
          set_: list[str] = SetOpt, calibration: Optional[Path] = CalibrationOpt,
          result_copy: Optional[Path] = typer.Option(None, "--result", help="also copy study.json here (e.g. "
                                                     "benchmarks/results/privacy-overhead.json, for `fedbw docs`)"),
          ) -> None:
    """Run every variant of a study, re-time it on every profile, print and write the table."""
    import shlex

    from fedbw.studies import load_study, run_study
    from fedbw.report.study import rich_table

    spec = load_study(file, [*set_, *flag_overrides(calibration=calibration)], engine)
    from fedbw.studies.limits import study_lost_replies

    warn(study_lost_replies(spec))
    with RoundProgress(max(v.config.training.rounds for v in spec.variants),
                       spec.variants[0].config.clients.per_round, quiet=False) as progress:
        result = run_study(spec, progress, on_variant=lambda i, n, v: err.print(f"variant {i + 1}/{n}: {v.name}"),
                           command=shlex.join(["fedbw", *sys.argv[1:]]))
    out.print(rich_table(result))
    for name, why in result.stopped_early.items():
        out.print(f"[yellow]{name}:[/] {why}")
    out.print(f"study: {result.study_dir} ({', '.join(f.name for f in result.files)})")
    if result_copy is not None:
        import shutil

        result_copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(result.study_dir / "study.json", result_copy)
        out.print(f"study.json copied to {result_copy}")
