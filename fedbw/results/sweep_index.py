"""sweep.json: the index of a sweep directory — its grid, and each point's overrides, run directory and status.

Why an index file: a sweep outlives the process that started it. The index is rewritten (atomically:
a temporary file, then a rename) at every change of a point's status, so after a crash or Ctrl-C it
says exactly which points finished, which one was cut short and which never started; ``--resume``,
``fedbw compare`` and ``fedbw report`` read the same file. It lives in ``results/`` with the records,
below the report that renders it (and with the labels of its points); ``fedbw.sweeps`` runs sweeps.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from fedbw.errors import ConfigError
from fedbw.files.versioned import SWEEP, read_json

INDEX_NAME = "sweep.json"

Status = Literal["pending", "running", "done", "failed", "interrupted"]


@dataclass(frozen=True)
class GridAxis:
    """One swept key and the values it takes, in the order given."""

    key: str
    values: tuple[Any, ...]

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "values": list(self.values)}


def describe_value(value: Any) -> str:
    """A value as a short label: strings bare, numbers compact, lists joined."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(describe_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={describe_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def point_label(overrides: dict[str, Any]) -> str:
    """``home-30`` for a one-key grid, ``profile=home-30 · rounds=2`` for more (the keys' last parts)."""
    if len(overrides) == 1:
        return describe_value(next(iter(overrides.values())))
    return " · ".join(f"{short_key(k, list(overrides))}={describe_value(v)}" for k, v in overrides.items())


#: Last parts of keys that say nothing alone (``privacy.secagg.enabled`` is "secagg.enabled", not "enabled").
_VAGUE = ("enabled", "mode", "name", "codec")


def short_key(key: str, keys: list[str]) -> str:
    """``key``'s last part, or its last two when that part is vague or shared with another key."""
    parts = key.split(".")
    last = parts[-1]
    clash = sum(k.split(".")[-1] == last for k in keys) > 1
    return ".".join(parts[-2:]) if (last in _VAGUE or clash) and len(parts) > 1 else last


@dataclass
class GridPoint:
    """One point of the grid and what became of it."""

    index: int  #: 1-based, in grid order
    overrides: dict[str, Any]
    status: Status = "pending"
    run_dir: str | None = None  #: relative to the sweep directory
    error: str | None = None
    attempts: int = 0
    started_utc: str | None = None
    finished_utc: str | None = None
    wall_s: float | None = None  #: how long the point ran on this machine
    pid: int | None = None  #: the process running it (status "running")
    stopped_early: str | None = None  #: the run ended before its last round (e.g. a privacy budget)
    previous_run_dirs: list[str] = field(default_factory=list)  #: cut-short attempts, kept, not reported

    @property
    def label(self) -> str:
        return point_label(self.overrides)


@dataclass
class SweepIndex:
    name: str
    config: str  #: the config file the sweep ran
    config_sha256: str  #: its text, so --resume can refuse an edited config
    engine: str
    sets: list[str]  #: --set items applied to every point
    grid: list[GridAxis]
    points: list[GridPoint]
    created_utc: str
    command: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**SWEEP.stamp(), "name": self.name, "config": self.config,
                "config_sha256": self.config_sha256, "engine": self.engine, "set": self.sets,
                "grid": [a.to_json() for a in self.grid], "created_utc": self.created_utc,
                "command": self.command, "points": [asdict(p) for p in self.points]}

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.points:
            out[p.status] = out.get(p.status, 0) + 1
        return out


def is_sweep_dir(path: Path) -> bool:
    return Path(path).is_dir() and (Path(path) / INDEX_NAME).is_file()


def write_index(sweep_dir: Path, index: SweepIndex) -> None:
    """Replace sweep.json in one step, so a reader never sees half of it."""
    path = Path(sweep_dir) / INDEX_NAME
    tmp = path.with_name(f".{INDEX_NAME}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(index.to_json(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_index(sweep_dir: Path) -> SweepIndex:
    """The index of ``sweep_dir``; ConfigError naming the file when it is missing, damaged or foreign."""
    path = Path(sweep_dir) / INDEX_NAME
    d = read_json(path, SWEEP, "pass a sweep directory made by `fedbw sweep --grid`")
    try:
        grid = [GridAxis(a["key"], tuple(a["values"])) for a in d["grid"]]
        points = [GridPoint(**p) for p in d["points"]]
        return SweepIndex(d["name"], d["config"], d["config_sha256"], d["engine"], list(d["set"]), grid, points,
                          d["created_utc"], d.get("command", ""))
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: the sweep index is incomplete ({type(exc).__name__}: {exc})") from None
