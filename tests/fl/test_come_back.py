"""A client that came back under emulate: fedbw's ServerApp finds its new node by a hello to nodes it has not seen."""

from __future__ import annotations

import pytest
from flwr.app import Message
from flwr.app.error import Error
from flwr.common import Code, GetPropertiesRes, Status
from flwr.compat.common.recorddict_compat import getpropertiesres_to_recorddict
from flwr.supercore.task_identity import TaskIdentity

from fedbw.engines.measured import read_events
from fedbw.fl.events import EventLog
from fedbw.fl.server_app import ComeBack


@pytest.fixture(autouse=True)
def _task_identity(monkeypatch):
    for attr, value in (("_task_id", 1), ("_run_id", 1), ("_node_id", 0)):
        monkeypatch.setattr(TaskIdentity, attr, value)


class _Nodes:
    """A grid whose nodes answer the hello with their partition-id (None: an error reply, a node gone again)."""

    def __init__(self, partition_of: dict[int, int | None]) -> None:
        self.partition_of = partition_of
        self.asked: list[list[int]] = []

    def get_node_ids(self):
        return list(self.partition_of)

    def send_and_receive(self, messages, timeout=None):
        self.asked.append([m.metadata.dst_node_id for m in messages])
        for m in messages:
            pid = self.partition_of[m.metadata.dst_node_id]
            if pid is None:
                reply = Message(Error(code=0, reason="node gone"), reply_to=m)
            else:
                res = GetPropertiesRes(Status(Code.OK, ""), {"partition-id": pid})
                reply = Message(getpropertiesres_to_recorddict(res), reply_to=m)
            reply.metadata.__dict__["_src_node_id"] = m.metadata.dst_node_id
            yield reply


def test_a_client_that_came_back_is_found_under_its_new_node_and_old_nodes_are_never_asked(tmp_path) -> None:
    node_of = {0: 100, 1: 101, 2: 102}
    # client 1's old node 101 is still listed (its heartbeat has not lapsed); 201 is client 1 again; 300 is gone
    grid = _Nodes({100: 0, 101: 1, 102: 2, 201: 1, 300: None})
    log = EventLog(tmp_path / "events.jsonl")
    back = ComeBack(grid, dict(node_of), log)
    found = back([1], node_of)
    assert found == {1: 201} and node_of == {0: 100, 1: 201, 2: 102}
    assert grid.asked == [[201, 300]]  # only nodes not seen before; the error reply is no failure
    assert back([1], node_of) == {} and grid.asked == [[201, 300]]  # nothing new: nobody asked again
    log.close()
    nodes = [e for e in read_events(tmp_path / "events.jsonl") if e["event"] == "nodes"]
    assert nodes == [{"event": "nodes", "node_of": {"0": 100, "1": 201, "2": 102}}]


def test_a_dropped_clients_old_node_is_stale_under_emulate_until_a_new_one_is_found() -> None:
    """Flower may still list a stopped SuperNode (its heartbeat not yet lapsed, e.g. a round closed early), so
    under emulate a planned dropout's node counts as gone from the round after its drop until a new node of
    it is found; the Simulation Engine keeps every node."""
    from types import SimpleNamespace

    from fedbw.fl.strategy import PlanFedAvg

    plan = SimpleNamespace(offline=[[1], [], [1], []])  # client 1 drops in rounds 1 and 3

    def strategy(engine: str, found: dict[int, int]) -> SimpleNamespace:
        return SimpleNamespace(settings=SimpleNamespace(config=SimpleNamespace(engine=engine), plan=plan),
                               _come_back=lambda *a: {}, _found_in=found)

    s = strategy("emulate", {0: 0, 1: 0})
    assert not PlanFedAvg._stale(s, 1, 1) and PlanFedAvg._stale(s, 1, 2) and not PlanFedAvg._stale(s, 0, 2)
    s._found_in[1] = 2  # found again in round 2: fresh until its next drop (round 3)
    assert not PlanFedAvg._stale(s, 1, 2) and not PlanFedAvg._stale(s, 1, 3) and PlanFedAvg._stale(s, 1, 4)
    assert not PlanFedAvg._stale(strategy("simulate", {1: 0}), 1, 2)
