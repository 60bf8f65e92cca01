"""Finished runs side by side, as ``fedbw compare`` and ``fedbw report`` show them: each run's summary,
config and context, and how many AllReduces of its model one of its rounds lasts on each fabric. Built by
:func:`fedbw.compare.load_runs` from what the runs recorded; read by the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fedbw.errors import ConfigError
from fedbw.files.atomic import write_json_atomic
from fedbw.files.versioned import ALLREDUCE, read_json
from fedbw.results.estimates import FabricEstimate
from fedbw.results.records import ClientRoundRecord, RoundRecord
from fedbw.results.summary import RunSummary

#: What a run recorded of the data-center side: one AllReduce of its model per fabric, at run time.
ALLREDUCE_FILE = "allreduce.json"


@dataclass(frozen=True)
class FabricRatio:
    """One AllReduce of the run's model on a data-center fabric, and how many of them one FL round lasts."""

    fabric: str
    ranks: int
    allreduce_s: float
    fl_round_over_allreduce: float | None


@dataclass
class ComparedRun:
    """A finished run as `fedbw compare` and `fedbw report` show it: records' summary, config, context."""

    label: str  #: what tells it apart from the others (a sweep point's values, or the config keys that differ)
    path: Path  #: its run directory
    summary: RunSummary
    config: dict[str, Any] | None  #: resolved_config.json (None when the directory has none)
    privacy: str  #: its privacy setting in words
    fabrics: list[FabricRatio]
    notes: list[str]  #: what the reader skipped (a torn last line), said as a warning
    overrides: dict[str, Any]  #: a sweep point's grid values ({} for a plain run)
    clients: list[ClientRoundRecord]
    rounds: list[RoundRecord]


@dataclass
class RunSet:
    runs: list[ComparedRun]
    notes: list[str]  #: points left out of a sweep (failed, interrupted, not run yet), warnings
    sweeps: list[tuple[Path, Any]]  #: (directory, SweepIndex) of every sweep argument


def write_allreduce(run_dir: Path, model: str, rows: list[FabricEstimate]) -> Path:
    """Record, in the run directory, one AllReduce of the run's model on each of its config's fabrics: what
    ``fedbw compare`` sets the run's rounds against, so a later catalog never changes a finished run's
    comparison."""
    return write_json_atomic(Path(run_dir) / ALLREDUCE_FILE,
                             {**ALLREDUCE.stamp(), "model": model, "fabrics": [asdict(r) for r in rows]})


def read_allreduce(run_dir: Path) -> list[FabricEstimate] | None:
    """The AllReduce rows a run recorded; None when it recorded none (an older fedbw, or an app run)."""
    path = Path(run_dir) / ALLREDUCE_FILE
    if not path.is_file():
        return None
    data = read_json(path, ALLREDUCE, "rerun the experiment")
    try:
        return [FabricEstimate(**row) for row in data["fabrics"]]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: incomplete ({type(exc).__name__}: {exc}); the run directory is damaged") from None
