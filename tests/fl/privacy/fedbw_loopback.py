"""fedbw's own ServerApp and ClientApp, unpatched, on the in-process loopback grid (no Ray)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flwr.app import Context, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID

from fedbw.config import ExperimentConfig
from fedbw.fl.privacy.loopback import DropFn, LoopbackGrid, task_identity
from fedbw.plan import Plan, build_plan


def run_apps(tmp_path: Path, cfg: ExperimentConfig, drop: DropFn | None = None
             ) -> tuple[Plan, LoopbackGrid, list[dict[str, Any]]]:
    """Run one fedbw federation as ``fedbw run`` would; returns (plan, grid, events)."""
    import fedbw.fl.client_app as client_app
    import fedbw.fl.server_app as server_app
    from fedbw.fl.settings import PLAN_KEY, write_plan_file

    tmp_path.mkdir(parents=True, exist_ok=True)
    plan = build_plan(cfg, device="cpu")
    path = write_plan_file(tmp_path, plan)
    grid = LoopbackGrid(client_app.app, cfg.clients.total, drop=drop)
    for ctx in grid.contexts.values():
        ctx.run_config = {PLAN_KEY: str(path)}
    server_ctx = Context(run_id=1, node_id=SUPERLINK_NODE_ID, node_config={}, state=RecordDict(),
                         run_config={PLAN_KEY: str(path)})
    with task_identity(1, SUPERLINK_NODE_ID):
        server_app.main(grid, server_ctx)
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    return plan, grid, events


def ends(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "round_end"]
