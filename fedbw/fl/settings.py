"""How the apps learn what to run: the serialized plan, written by the engine into the run directory.

Flower hands apps a ``run_config``; the engine puts the plan file's path under :data:`PLAN_KEY`.
``flwr.simulation.run_simulation`` (the only in-process simulation entry in Flower 1.42) gives every
app an empty ``run_config``, so :data:`PLAN_ENV` is the fallback; Ray actors inherit it from the
process that started Ray. The file holds the :class:`~fedbw.plan.Plan` as the engine built it (links,
samples, rounds, ε schedule, device): apps read it once per process and never rebuild it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from fedbw.config import ExperimentConfig
from fedbw.errors import RunError
from fedbw.plan import Plan

#: run_config key that holds the plan file's path.
PLAN_KEY = "fedbw-plan"
#: Environment fallback for the same path.
PLAN_ENV = "FEDBW_PLAN"
#: torch threads for fedbw's ClientApps (simulate: the CPUs Ray gives each client; emulate under caps: one)
THREADS_ENV = "FEDBW_TORCH_THREADS"
PLAN_FILE = "plan.json"
EVENTS_FILE = "events.jsonl"


@dataclass(frozen=True)
class AppSettings:
    """Everything the apps need: the plan, and where this run logs its events."""

    plan: Plan
    run_dir: Path
    events_path: Path
    #: False only for the baseline of benchmarks/simulate.py: no message sizing, no client mod (rounds are
    #: still logged, so their wall time can be compared).
    measure: bool = True

    @property
    def config(self) -> ExperimentConfig:
        return self.plan.config

    @property
    def device(self) -> str:
        """The torch device the runner resolved ("cpu" when the plan names none)."""
        return self.plan.device or "cpu"

    @property
    def synthetic(self) -> bool:
        return self.config.clients.compute == "synthetic"


def write_plan_file(run_dir: Path, plan: Plan, measure: bool = True) -> Path:
    """Write the file the apps read; returns its path (pass it as run_config[PLAN_KEY] or $FEDBW_PLAN)."""
    run_dir = Path(run_dir).resolve()
    path = run_dir / PLAN_FILE
    data = {"plan": plan.to_json(),
            "run": {"run_dir": str(run_dir), "events_path": str(run_dir / EVENTS_FILE), "measure": measure}}
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    return path


def plan_path_from(run_config: Any) -> str:
    """The plan path from a Flower ``run_config`` (preferred) or the environment."""
    value = None
    if run_config is not None:
        try:
            value = run_config.get(PLAN_KEY)
        except AttributeError:
            value = None
    value = value or os.environ.get(PLAN_ENV)
    if not value:
        raise RunError(f"the fedbw apps need a plan file: pass run_config {PLAN_KEY}=PATH or set ${PLAN_ENV}; "
                       "start runs with `fedbw run CONFIG --engine simulate|emulate`")
    return str(value)


@lru_cache(maxsize=4)
def load_settings(path: str) -> AppSettings:
    """Read and cache one plan file (apps are called once per message; parse it once per process)."""
    p = Path(path)
    if not p.exists():
        raise RunError(f"plan file {path} not found; the run directory was moved or deleted")
    data = json.loads(p.read_text(encoding="utf-8"))
    run = data["run"]
    return AppSettings(plan=Plan.from_json(data["plan"], source=str(p)), run_dir=Path(run["run_dir"]),
                       events_path=Path(run["events_path"]), measure=bool(run["measure"]))


def settings_for(context: Any) -> AppSettings:
    """Settings for a Flower ``Context`` (server or client)."""
    return load_settings(plan_path_from(getattr(context, "run_config", None)))
