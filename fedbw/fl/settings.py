"""How the apps learn what to run: a resolved plan file written by the engine into the run directory.

Flower hands apps a ``run_config``; the engine puts the plan file's path under :data:`PLAN_KEY`.
``flwr.simulation.run_simulation`` (the only in-process simulation entry in Flower 1.42) gives every
app an empty ``run_config``, so :data:`PLAN_ENV` is the fallback; Ray actors inherit it from the
process that started Ray.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from fedbw.config import ExperimentConfig, config_to_dict
from fedbw.errors import RunError
from fedbw.plan import Plan, build_plan

#: run_config key that holds the plan file's path.
PLAN_KEY = "fedbw-plan"
#: Environment fallback for the same path.
PLAN_ENV = "FEDBW_PLAN"
PLAN_FILE = "plan.json"
EVENTS_FILE = "events.jsonl"


@dataclass(frozen=True)
class AppSettings:
    """Everything the apps need, rebuilt from the plan file (the plan is deterministic in the config)."""

    plan: Plan
    run_dir: Path
    events_path: Path
    device: str  #: resolved torch device: "cpu" or "cuda"
    #: False only for the baseline of benchmarks/simulate.py: no message sizing, no client mod (rounds are
    #: still logged, so their wall time can be compared).
    measure: bool = True

    @property
    def config(self) -> ExperimentConfig:
        return self.plan.config

    @property
    def synthetic(self) -> bool:
        return self.config.clients.compute == "synthetic"


def write_plan_file(run_dir: Path, cfg: ExperimentConfig, device: str, measure: bool = True) -> Path:
    """Write the file the apps read; returns its path (pass it as run_config[PLAN_KEY] or $FEDBW_PLAN)."""
    run_dir = Path(run_dir).resolve()
    path = run_dir / PLAN_FILE
    data = {"config": config_to_dict(cfg), "run_dir": str(run_dir), "events_path": str(run_dir / EVENTS_FILE),
            "device": device, "measure": measure}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
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
    from fedbw.config import config_from_dict

    p = Path(path)
    if not p.exists():
        raise RunError(f"plan file {path} not found; the run directory was moved or deleted")
    data = json.loads(p.read_text(encoding="utf-8"))
    cfg = config_from_dict(data["config"], source=str(p))
    return AppSettings(plan=build_plan(cfg), run_dir=Path(data["run_dir"]), events_path=Path(data["events_path"]),
                       device=data.get("device", "cpu"), measure=bool(data.get("measure", True)))


def settings_for(context: Any) -> AppSettings:
    """Settings for a Flower ``Context`` (server or client)."""
    return load_settings(plan_path_from(getattr(context, "run_config", None)))
