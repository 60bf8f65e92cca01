"""Link-rate traces that ship with fedbw: synthetic stand-ins for measured cellular traces (issue 32.3).

Why synthetic: the measured traces people use (mahimahi's, GPL-3) cannot ship beside Apache-2.0 code.
Their statistics can (:mod:`fedbw.traces.synthetic`): ``traces.toml`` holds, per shipped trace, the shape
of each direction measured from the source trace, where that trace came from and which command
measured it, and the seed and length of the draw; ``traces/NAME.csv`` is that draw, written by
``benchmarks/traces.py`` and checked against a fresh draw by tests/catalog/test_traces.py (so a CSV
cannot drift from the numbers that made it). A user's own copy of a measured trace is read as it is
(`fedbw trace show FILE`); `fedbw trace generate --like FILE` makes a shippable stand-in of it.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from fedbw.catalog._lookup import lookup
from fedbw.traces.synthetic import RateShape, synthesize
from fedbw.traces.trace import RateTrace

HERE = Path(__file__).resolve().parent
SHAPES_FILE = HERE / "traces.toml"
TRACE_DIR = HERE / "traces"


@dataclass(frozen=True)
class ShippedTrace:
    """One shipped trace: its draw (``seed``, ``duration_s``) from ``up`` and ``down``, measured from
    ``source`` by ``measured_by``."""

    name: str
    description: str
    source: str
    licence_of_source: str
    measured_by: str
    measured_utc: str
    duration_s: float
    seed: int
    up: RateShape
    down: RateShape

    @property
    def path(self) -> Path:
        return TRACE_DIR / f"{self.name}.csv"

    def draw(self) -> RateTrace:
        """The trace drawn afresh from the shapes (what the CSV must hold)."""
        return synthesize(self.name, self.up, self.down, self.duration_s, self.seed,
                          source=f"synthetic, with the statistics of {self.source}")


@cache
def shipped_traces() -> dict[str, ShippedTrace]:
    """Every shipped trace by name, from ``traces.toml`` (empty when the file is absent)."""
    if not SHAPES_FILE.is_file():
        return {}
    doc = tomllib.loads(SHAPES_FILE.read_text(encoding="utf-8"))
    out = {}
    for name, entry in doc.get("trace", {}).items():
        out[name] = ShippedTrace(name=name, description=entry["description"], source=entry["source"],
                                 licence_of_source=entry["licence_of_source"], measured_by=entry["measured_by"],
                                 measured_utc=entry["measured_utc"], duration_s=float(entry["duration_s"]),
                                 seed=int(entry["seed"]), up=RateShape(**entry["up"]), down=RateShape(**entry["down"]))
    return out


def get_shipped_trace(name: str) -> ShippedTrace:
    return lookup(shipped_traces(), name, "trace", "fedbw profiles")


def trace_path(name_or_path: str | os.PathLike[str]) -> Path:
    """A trace argument as a file: an existing file as given, else a shipped trace's name (an unknown
    name is the catalog's error, listing the shipped ones)."""
    path = Path(name_or_path)
    if path.exists() or path.suffix or os.sep in str(name_or_path):
        return path
    return get_shipped_trace(str(name_or_path)).path


@cache
def load_named_trace(name_or_path: str) -> RateTrace:
    """A config's trace: a shipped trace's name or a file (CSV or mahimahi), read once per run; every
    problem is one ConfigError naming the file and line, or a CatalogError for an unknown name."""
    from fedbw.traces import load_trace

    return load_trace(trace_path(name_or_path))
