"""``fedbw simulate --app DIR``: any Flower app, unmodified, in the Simulation Engine on the virtual clock.

The app's own ServerApp and ClientApp run inside fedbw's measuring wrappers (:mod:`fedbw.fl.foreign`) in
a child process (:mod:`.app_child`); every message they exchange is laid on the same clock as fedbw's own
apps (:mod:`.clock`): each client's link, the shared server link and Flower's deployment costs. The app's
ClientApp load is fedbw's calibrated one shifted by how much longer this app takes to import
(:mod:`fedbw.engines.app_start`); a message's compute is the app's own time on it (the wrapper
cannot tell training from the app's other work).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedbw.engines.foreign_app import app_plan, check_app_dir, client_component
from fedbw.engines.base import NoProgress, Progress
from fedbw.engines.simulate import ENGINE, failure_message, run_child
from fedbw.engines.simulate.child import actor_count
from fedbw.engines.simulate.clock import records_from_round_events
from fedbw.errors import RunError
from fedbw.plan import Plan
from fedbw.results.records import ClientRoundRecord, RecordWriter, RoundRecord
from fedbw.tomlvalue import split_assignment

EVENTS_FILE = "events.jsonl"
SPEC_FILE = "app-simulation.json"


@dataclass
class AppSimulation:
    """A foreign app's simulated run: its records and what the model assumed about it."""

    run_dir: Path
    plan: Plan
    clients: list[ClientRoundRecord]
    rounds: list[RoundRecord]
    clientapp_load_s: float | None  #: process start + the app's load the deployment model used, per message


@dataclass
class PreparedAppSimulation:
    """An app ready to simulate: its directory, the federation (the plan, its ClientApp load shifted to
    this app's), its run config. The runner gives it a run directory and a records writer
    (:func:`fedbw.runner.run_app`); :func:`execute_app_simulation` runs it."""

    app_dir: Path
    plan: Plan
    overrides: dict[str, Any]
    clientapp_load_s: float | None


def prepare_app_simulation(app_dir: Path, num_clients: int, profile: str, *, rounds: int | None = None,
                           run_config: Sequence[str] = (), seed: int = 0, server_link: str | None = None,
                           calibration: str | None = None) -> PreparedAppSimulation:
    """The Flower app in ``app_dir`` with ``num_clients`` virtual SuperNodes on ``profile`` links: checked
    and planned.

    ``rounds`` sets the app's ``num-server-rounds`` (Flower's template key); ``run_config`` items are
    ``key=value`` (TOML values) over the app's ``[tool.flwr.app.config]``.
    """
    app_dir = Path(app_dir).resolve()
    check_app_dir(app_dir)
    overrides: dict[str, Any] = dict(split_assignment(i, "--run-config", "num-server-rounds=3") for i in run_config)
    if rounds is not None:
        overrides["num-server-rounds"] = rounds
    plan = app_plan(num_clients, profile, seed=seed, server_link=server_link, calibration=calibration,
                    name=app_dir.name)
    load_s = None
    if plan.costs is not None:
        from fedbw.engines.app_start import app_clientapp_other_s

        other = app_clientapp_other_s(plan.costs.clientapp_other_s, client_component(app_dir), app_dir)
        # the app's imports replace fedbw's when Flower loads it; it brings no fedbw set-up of its own
        plan = dataclasses.replace(plan, costs=dataclasses.replace(plan.costs, clientapp_other_s=other,
                                                                   app_setup_s=0.0))
        load_s = plan.costs.clientapp_start_s + other
    return PreparedAppSimulation(app_dir, plan, overrides, load_s)


def execute_app_simulation(app: PreparedAppSimulation, run_dir: Path, writer: RecordWriter,
                           progress: Progress = NoProgress) -> AppSimulation:
    """Simulate ``app`` into ``run_dir``: its rounds on the virtual clock through ``writer``."""
    plan, run_id = app.plan, run_dir.name
    num_clients = len(plan.clients)
    events_path = run_dir / EVENTS_FILE
    events_path.unlink(missing_ok=True)
    spec = {"app_dir": str(app.app_dir), "clients": num_clients, "overrides": app.overrides,
            "events_path": str(events_path), "actors": min(num_clients, actor_count(synthetic=False))}
    (run_dir / SPEC_FILE).write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    clients: list[ClientRoundRecord] = []
    rounds_out: list[RoundRecord] = []
    clock = plan.deployment_clock()

    def on_round(rnd) -> None:
        crecs, record = records_from_round_events(plan, run_id, ENGINE, rnd, clock=clock)
        record.extra["app"] = str(app.app_dir)
        writer.write([*crecs, record])
        clients.extend(crecs)
        rounds_out.append(record)

    command = [sys.executable, "-m", "fedbw.engines.simulate.app_child", str(run_dir / SPEC_FILE)]
    run = run_child(command, run_dir, events_path, num_clients, progress, on_round)
    if run.code != 0 or run.assembler.error:
        raise RunError(failure_message(len(rounds_out), None, run, run_dir))
    if not rounds_out:
        raise RunError(f"the app ran but fedbw saw no training round in {events_path}; its ServerApp sent no "
                       f"train messages (rounds come from group_id or a 'server-round' config value)")
    return AppSimulation(run_dir, plan, clients, rounds_out, app.clientapp_load_s)
