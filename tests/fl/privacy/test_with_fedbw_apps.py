"""The integration functions inside fedbw's real ServerApp/ClientApp (small-cnn on digits, real training),
driven in-process on the loopback grid.

Until the apps call :mod:`fedbw.fl.privacy` themselves, the test routes their three hook points in
``fedbw.fl.wiring`` to it; afterwards the patch changes nothing.
"""

from __future__ import annotations

import json

import pytest
from flwr.app import Context, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID

from fedbw.config import config_from_dict
from fedbw.fl.events import ROUND_END
from fedbw.fl.privacy import build_client_mods, build_fit_workflow, wrap_strategy
from fedbw.fl.privacy.loopback import LoopbackGrid, task_identity

CLIENTS, ROUNDS = 5, 2


def _run(tmp_path, monkeypatch, **sections):
    import fedbw.fl.client_app as client_app
    import fedbw.fl.server_app as server_app
    import fedbw.fl.wiring as wiring
    from fedbw.fl.measure import measure_mod
    from fedbw.fl.settings import PLAN_KEY, write_plan_file

    monkeypatch.setattr(wiring, "client_mods",
                        lambda s: ([measure_mod] if s.measure else []) + build_client_mods(s.config))
    monkeypatch.setattr(server_app, "fit_workflow", lambda s: build_fit_workflow(s.config))
    monkeypatch.setattr(server_app, "wrap_strategy", lambda s, st: wrap_strategy(s.config, st))
    cfg = config_from_dict({"engine": "simulate", "device": "cpu", "seed": 1,
                            "clients": {"total": CLIENTS, "per_round": CLIENTS},
                            "training": {"rounds": ROUNDS}, **sections})
    tmp_path.mkdir(parents=True, exist_ok=True)
    plan = write_plan_file(tmp_path, cfg, "cpu")
    grid = LoopbackGrid(client_app.app, CLIENTS)
    for ctx in grid.contexts.values():
        ctx.run_config = {PLAN_KEY: str(plan)}
    server_ctx = Context(run_id=1, node_id=SUPERLINK_NODE_ID, node_config={}, state=RecordDict(),
                         run_config={PLAN_KEY: str(plan)})
    with task_identity(1, SUPERLINK_NODE_ID):
        server_app.main(grid, server_ctx)
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    return grid, [e for e in events if e["event"] == ROUND_END]


@pytest.mark.slow
def test_packed_secagg_in_fedbw_apps_matches_plain_fedavg(tmp_path, monkeypatch):
    plain_grid, plain_ends = _run(tmp_path / "plain", monkeypatch)
    packed_grid, packed_ends = _run(tmp_path / "packed", monkeypatch,
                                    privacy={"secagg": {"enabled": True, "mode": "packed"}})
    assert len(plain_ends) == len(packed_ends) == ROUNDS
    for a, b in zip(plain_ends, packed_ends):  # SecAgg+ quantization barely moves training
        assert b["loss"] == pytest.approx(a["loss"], abs=0.02)
    plain_up = max(e.bytes_up for e in plain_grid.exchanges if e.stage == "train")
    for rnd in ("1", "2"):
        ex = [e for e in packed_grid.exchanges if e.stage == "collect_masked_vectors" and e.group_id == rnd]
        assert len(ex) == CLIENTS
        assert max(e.bytes_up for e in ex) <= 1.02 * plain_up
        assert max(e.bytes_down for e in ex) <= 1.02 * max(e.bytes_down for e in plain_grid.exchanges
                                                           if e.stage == "train")
