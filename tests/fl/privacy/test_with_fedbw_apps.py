"""The integration functions inside fedbw's real ServerApp/ClientApp (small-cnn on digits, real training),
driven in-process on the loopback grid.

Nothing is patched: the apps take their mods, workflow and strategy wrapper from the plan through
``fedbw.fl.wiring``, and rounds and ε from the plan's budget, exactly as in ``fedbw run``.
"""

from __future__ import annotations

import json

import pytest
from flwr.app import Context, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID

from fedbw.config import config_from_dict
from fedbw.fl.events import ROUND_END
from fedbw.fl.privacy.loopback import LoopbackGrid, task_identity
from fedbw.plan import build_plan
from fedbw.config.accounting import config_budget, config_epsilons

CLIENTS, ROUNDS = 5, 2


def _run(tmp_path, **sections):
    import fedbw.fl.client_app as client_app
    import fedbw.fl.server_app as server_app
    from fedbw.fl.settings import PLAN_KEY, write_plan_file

    base = {"engine": "simulate", "device": "cpu", "seed": 1, "clients": {"total": CLIENTS, "per_round": CLIENTS},
            "training": {"rounds": ROUNDS}}
    cfg = config_from_dict({**base, **sections})
    tmp_path.mkdir(parents=True, exist_ok=True)
    plan = write_plan_file(tmp_path, build_plan(cfg, device="cpu"))
    grid = LoopbackGrid(client_app.app, CLIENTS)
    for ctx in grid.contexts.values():
        ctx.run_config = {PLAN_KEY: str(plan)}
    server_ctx = Context(run_id=1, node_id=SUPERLINK_NODE_ID, node_config={}, state=RecordDict(),
                         run_config={PLAN_KEY: str(plan)})
    with task_identity(1, SUPERLINK_NODE_ID):
        server_app.main(grid, server_ctx)
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    return grid, [e for e in events if e["event"] == ROUND_END], events[-1]


@pytest.mark.slow
def test_packed_secagg_in_fedbw_apps_matches_plain_fedavg(tmp_path):
    plain_grid, plain_ends, _ = _run(tmp_path / "plain")
    packed_grid, packed_ends, _ = _run(tmp_path / "packed", privacy={"secagg": {"enabled": True, "mode": "packed"}})
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


@pytest.mark.slow
def test_secagg_with_client_side_dp_reports_epsilon_and_stops_at_the_budget(tmp_path):
    """Stock SecAgg+ with client-side clipping; the budget allows 2 of 3 rounds (4 of 5 clients sampled)."""
    dp = {"enabled": True, "mode": "central-client-fixed", "noise_multiplier": 1.0, "clipping_norm": 5.0}
    sections = {"clients": {"total": CLIENTS, "per_round": CLIENTS - 2}, "training": {"rounds": 3},
                "privacy": {"secagg": {"enabled": True}, "dp": dp}}
    probe = config_from_dict({"engine": "estimate", **sections})
    eps = config_epsilons(probe)
    dp["max_epsilon"] = (eps[1] + eps[2]) / 2
    cfg = config_from_dict({"engine": "estimate", **sections})
    budget = config_budget(cfg)
    assert budget.rounds == 2 and budget.stop_reason is not None
    _, ends, last = _run(tmp_path, **sections)
    assert [e["round"] for e in ends] == [1, 2]
    assert [e["epsilon"] for e in ends] == pytest.approx(eps[:2])
    assert last["event"] == "end" and last["stopped_early"] == budget.stop_reason
    assert all(e["loss"] is not None and e["loss"] == e["loss"] for e in ends)  # finite: noise at this scale trains
