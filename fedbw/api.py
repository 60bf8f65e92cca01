"""fedbw from Python: the same path as the CLI, returning typed results.

Why: researchers work in notebooks. ``fedbw.run`` takes a config (a TOML path, a dict, or nothing for the
embedded defaults), overrides as a dict of dotted keys, and an engine; it runs through
:func:`fedbw.runner.run_experiment` (the function ``fedbw run`` calls), so the run directory, records,
summary and plots are the CLI's. ``fedbw.load`` reads a finished run back. Both return a :class:`Run`
whose ``rounds_frame()`` and ``clients_frame()`` are pandas DataFrames when pandas is installed
(``pip install "fedbw[pandas]"``). Errors are :class:`fedbw.errors.FedbwError` with the CLI's messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedbw.errors import ConfigError

if TYPE_CHECKING:
    import pandas

    from fedbw.config import ExperimentConfig
    from fedbw.results.records import ClientRoundRecord, RoundRecord
    from fedbw.results.summary import RunSummary

#: Overrides: ``{"clients.total": 20}`` or ``["clients.total=20"]`` (values as Python or as TOML text).
Overrides = Mapping[str, Any] | Sequence[str] | None


@dataclass
class Run:
    """A run's results: its records (one per round, one per client per round), their summary, the config
    that ran, and where its directory is."""

    run_dir: Path | None
    rounds: list[RoundRecord]
    clients: list[ClientRoundRecord]
    summary: RunSummary
    config: dict[str, Any] | None = None
    stopped_early: str | None = None
    notes: list[str] = field(default_factory=list)  #: what reading it skipped (a torn last line)

    def rounds_frame(self) -> pandas.DataFrame:
        """One row per round: round time, its parts, communication share, bytes, loss, accuracy, ε."""
        pd = _pandas()
        rows = []
        for r in self.rounds:
            d = r.to_json()
            d.pop("stage_times_s", None)
            host = d.pop("host", None)
            extra = d.pop("extra", None) or {}
            privacy = d.pop("privacy", None)
            d.update({f"extra.{k}": v for k, v in extra.items() if not isinstance(v, (dict, list))})
            if host:
                d.update({f"host.{k}": v for k, v in host.items()})
            if privacy:
                d.update({f"privacy.{k}": v for k, v in privacy.items() if not isinstance(v, (dict, list))})
            rows.append(d)
        return pd.DataFrame(rows)

    def clients_frame(self) -> pandas.DataFrame:
        """One row per client per round per stage: bytes and seconds of the download, compute, upload and
        Flower's own time."""
        pd = _pandas()
        rows = []
        for c in self.clients:
            base = {"round": c.round, "client_id": c.client_id, "profile": c.profile, "engine": c.engine,
                    "dropped": c.dropped, "train_loss": c.train_loss}
            for st in c.stages:
                rows.append({**base, "stage": st.stage, "bytes_down": st.bytes_down, "bytes_up": st.bytes_up,
                             "t_down_s": st.t_down_s, "t_compute_s": st.t_compute_s, "t_up_s": st.t_up_s,
                             "t_framework_s": st.t_framework_s, "t_total_s": st.t_total_s})
        return pd.DataFrame(rows)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ConfigError('DataFrames need pandas: pip install "fedbw[pandas]" (or pandas)') from None
    return pandas


def _overrides(set_: Overrides) -> list[str]:
    """``{"clients.total": 20}`` or ``["clients.total=20"]`` as ``--set`` items."""
    from fedbw.tomlvalue import format_value

    if set_ is None:
        return []
    if isinstance(set_, Mapping):
        return [f"{k}={format_value(v)}" for k, v in set_.items()]
    if isinstance(set_, str):
        raise ConfigError(f"set= takes a dict of dotted keys or a list of 'key=value' items, not a string "
                          f"({set_!r}: wrap it in a list)")
    return [str(item) for item in set_]


def flag_sets(engine: str | None = None, calibration: str | Path | None = None) -> list[str]:
    """``engine`` and ``calibration`` as the ``--set`` items they stand for (the CLI's flags too)."""
    from fedbw.tomlvalue import format_value

    sets = []
    if engine is not None:
        sets.append(f"engine={format_value(engine)}")
    if calibration is not None:
        sets.append(f"deployment.calibration={format_value(str(calibration))}")
    return sets


def resolve_config(source: Any = None, *, engine: str | None = None, set: Overrides = None,  # noqa: A002
           calibration: str | Path | None = None) -> ExperimentConfig:
    """The validated config a run would use: a TOML path, a dict (the TOML's tables), an
    :class:`~fedbw.config.ExperimentConfig`, or None for the embedded defaults; ``set``, ``engine`` and
    ``calibration`` as the CLI's ``--set``, ``--engine`` and ``--calibration`` (which call this)."""
    from fedbw.config import ExperimentConfig, config_from_dict, config_to_dict, load_config

    sets = [*_overrides(set), *flag_sets(engine, calibration)]
    if source is None:
        return config_from_dict({}, sets, source="defaults")
    if isinstance(source, ExperimentConfig):
        return config_from_dict(config_to_dict(source), sets, source="config")
    if isinstance(source, Mapping):
        return config_from_dict(dict(source), sets, source="config")
    if isinstance(source, (str, Path)):
        return load_config(source, sets)
    raise ConfigError(f"config must be a TOML path, a dict, an ExperimentConfig or None, not {type(source).__name__}")


def run(source: Any = None, *, engine: str | None = None, set: Overrides = None,  # noqa: A002
        progress: Any = None) -> Run:
    """Run an experiment as ``fedbw run`` does (a run directory under the config's ``output_dir``); the
    records come back as a :class:`Run`. ``progress(round, done, total)`` is called as clients finish."""
    from fedbw.engines.base import NoProgress
    from fedbw.results.summary import summarize
    from fedbw.runner import run_experiment

    from fedbw.config import config_to_dict

    cfg = resolve_config(source, engine=engine, set=set)
    result = run_experiment(cfg, progress or NoProgress)
    name = result.run_dir.name if result.run_dir is not None else cfg.name
    return Run(result.run_dir, result.rounds, result.clients, summarize(name, result.clients, result.rounds),
               config_to_dict(cfg), result.stopped_early)


def estimate(source: Any = None, *, set: Overrides = None) -> Run:  # noqa: A002
    """:func:`run` on the analytic engine: instant, and it trains nothing."""
    return run(source, engine="estimate", set=set)


def load(run_dir: str | Path) -> Run:
    """A finished (or interrupted) run directory, or its records.jsonl, read back as ``fedbw compare``
    reads it (:func:`fedbw.compare.load_run`)."""
    import json

    from fedbw.compare import load_run

    run = load_run(Path(run_dir))
    stopped = None
    try:  # summary.json is the runner's, written last: a run killed before its finish has none
        stopped = json.loads((run.path / "summary.json").read_text(encoding="utf-8")).get("stopped_early")
    except (OSError, ValueError, AttributeError):
        pass
    return Run(run.path, run.rounds, run.clients, run.summary, run.config, stopped, run.notes)
