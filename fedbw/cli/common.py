"""What every command shares: the Typer app, the consoles, error handling, config loading, progress."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Callable

import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from fedbw.config import ExperimentConfig
from fedbw.errors import FedbwError

#: The order `fedbw --help` lists the commands in: what a user needs first (run an experiment, answer
#: without one, sweep, study, read and compare results), then the tools behind them.
COMMAND_ORDER = ("run", "estimate", "sweep", "study", "report", "compare", "validate", "emulate", "simulate",
                 "profiles", "trace", "models", "allreduce", "step", "calibrate", "shape", "docs")


class _InUserOrder(typer.core.TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda n: (rank.get(n, len(rank)), names.index(n)))


app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="rich", cls=_InUserOrder,
                  help="fedbw — how long federated rounds take on home uplinks, and what privacy costs.")
# Piped output (files, CI logs) gets a wide console so tables are never cut; terminals keep their width.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def warn(notes: list[str]) -> None:
    """Each note as a warning on stderr (what the user should know beside the result, not an error)."""
    for note in notes:
        err.print(f"[yellow]warning:[/] {escape(note)}", highlight=False, soft_wrap=True)


#: What Ctrl-C leaves, for commands that write a run directory.
RUNS_KEPT = "finished rounds are kept in the run directory."


def friendly(fn: Callable[..., Any] | None = None, *, interrupted: str = RUNS_KEPT) -> Any:
    """Turn FedbwError into one red line and its exit code; Ctrl-C into exit 130 and ``interrupted`` (what
    the stopped command left). Never a traceback. Use as ``@friendly`` or ``@friendly(interrupted=...)``."""
    if fn is None:
        return functools.partial(friendly, interrupted=interrupted)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except FedbwError as exc:
            err.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, highlight=False)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err.print(f"[yellow]interrupted[/]: {escape(interrupted)}")
            raise typer.Exit(130) from None
        except OSError as exc:  # a full, read-only or foreign output directory: one line, exit 1
            from fedbw.files.atomic import disk_error

            if (known := disk_error(exc)) is None:
                raise
            err.print(f"[bold red]error:[/] {escape(str(known))}", markup=True, highlight=False)
            raise typer.Exit(known.exit_code) from None

    return wrapper


def load(config: Path, overrides: list[str], engine: str | None = None,
         calibration: Path | None = None) -> ExperimentConfig:
    """The config at ``config`` with ``--set`` overrides and, if given, ``--engine`` and ``--calibration``: the
    Python API's :func:`fedbw.api.resolve_config`, so a notebook and the CLI read a config one way."""
    from fedbw.api import resolve_config

    return resolve_config(config, engine=engine, set=list(overrides), calibration=calibration)


def flag_overrides(engine: str | None = None, calibration: Path | None = None) -> list[str]:
    """``--engine`` and ``--calibration`` as the ``--set`` items they stand for."""
    from fedbw.api import flag_sets

    return flag_sets(engine, calibration)


SetOpt = typer.Option([], "--set", "-s", help="Override a config key: --set clients.total=20 (value in TOML syntax)")
CalibrationOpt = typer.Option(None, "--calibration", help="Flower's costs measured by `fedbw calibrate` (TOML); "
                                                         "default: the catalog's")


class RoundProgress:
    """A Rich progress bar over rounds and clients, or nothing when output is machine-read."""

    def __init__(self, rounds: int, per_round: int, quiet: bool) -> None:
        self.rounds, self.per_round, self.quiet = rounds, per_round, quiet

    def __enter__(self) -> Callable[[int, int, int], None]:
        if self.quiet:
            return lambda r, d, t: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=err, transient=True)
        self.bar.start()
        self.task = self.bar.add_task("rounds", total=self.rounds)

        def update(round_index: int, done: int, total: int) -> None:
            finished = round_index if done >= total else round_index - 1
            self.bar.update(self.task, completed=finished,
                            description=f"round {round_index}/{self.rounds} · clients {done}/{total}")

        return update

    def __exit__(self, *exc: object) -> None:
        if not self.quiet:
            self.bar.stop()
