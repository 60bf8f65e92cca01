"""Measurement: message sizing, stage names, the client mod, the measuring Grid."""

import json

import numpy as np
from flwr.app import ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.common import FitIns, ndarrays_to_parameters
from flwr.compat.common.recorddict_compat import fitins_to_recorddict

import pytest
from flwr.supercore.task_identity import TaskIdentity

from fedbw.fl.events import EventLog
from fedbw.fl.measure import (MEASURE_RECORD, MeasuringGrid, exchange_stage, measure_mod, message_bytes,
                              report_compute)


@pytest.fixture(autouse=True)
def _task_identity(monkeypatch):
    """Flower stamps messages with the running task's identity; give this test process one."""
    for attr, value in (("_task_id", 1), ("_run_id", 1), ("_node_id", 0)):
        monkeypatch.setattr(TaskIdentity, attr, value)


def _fit_message(arrays, node_id=1):
    content = fitins_to_recorddict(FitIns(ndarrays_to_parameters(arrays), {"round": 1}), True)
    return Message(content=content, dst_node_id=node_id, message_type="train", group_id="1")


def test_message_bytes_is_float32_payload_plus_small_framing():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((256, 256)).astype(np.float32) for _ in range(4)]
    raw = sum(a.nbytes for a in arrays)
    size = message_bytes(_fit_message(arrays))
    assert raw < size < raw * 1.01 + 3_000


def test_identical_objects_travel_once():
    """Flower's object tree is content-addressed: a repeated array is one object (and one upload)."""
    a = np.random.default_rng(1).standard_normal(10_000).astype(np.float32)
    assert message_bytes(_fit_message([a, a.copy()])) < 1.1 * message_bytes(_fit_message([a]))


def test_message_bytes_grows_with_each_array():
    one = message_bytes(_fit_message([np.ones(1000, np.float32) * 0.5]))
    two = message_bytes(_fit_message([np.ones(1000, np.float32) * 0.5, np.ones(1000, np.float32) * 0.25]))
    assert two - one > 4000  # the second array's bytes and its own framing


def test_stage_names_follow_secaggplus_configs():
    plain = _fit_message([np.zeros(3, np.float32)])
    assert exchange_stage(plain) == "fit"
    sa = Message(RecordDict({"secaggplus_configs": ConfigRecord({"stage": "share_keys"})}), 1, "train",
                 group_id="1")
    assert exchange_stage(sa) == "share_keys"
    hello = Message(RecordDict({"x": ConfigRecord({})}), 1, "get_properties", group_id="0")
    assert exchange_stage(hello) == "get_properties"


def _reply_to(msg, content):
    msg.metadata.__dict__["_message_id"] = "m1"
    return Message(content, reply_to=msg)


def test_measure_mod_attaches_compute_and_timestamps():
    ctx = Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={})
    msg = _fit_message([np.zeros(3, np.float32)])

    def app(m, c):
        report_compute(c, 0.25, 1.5, 10)
        return _reply_to(m, RecordDict({"r": MetricRecord({"a": 1})}))

    reply = measure_mod(msg, ctx, app)
    rec = dict(reply.content.config_records[MEASURE_RECORD])  # a ConfigRecord: strategies count MetricRecords
    assert rec["compute_s"] == 0.25 and rec["num_examples"] == 10 and rec["train_loss"] == 1.5
    assert rec["t_reply"] >= rec["t_recv"]
    assert "fedbw.compute" not in ctx.state.metric_records  # consumed, not left for the next message


class _FakeGrid:
    """Replies to every pushed message at once with a payload of known size."""

    def __init__(self):
        self.pushed = {}

    def push_messages(self, messages):
        ids = []
        for i, m in enumerate(messages):
            mid = f"id{len(self.pushed)}"
            m.metadata.__dict__["_message_id"] = mid
            self.pushed[mid] = m
            ids.append(mid)
        return ids

    def pull_messages(self, ids):
        out = []
        for mid in list(ids):
            m = self.pushed.pop(mid, None)
            if m is not None:
                content = RecordDict({MEASURE_RECORD: ConfigRecord({"compute_s": 0.5, "num_examples": 7}),
                                      "metrics": MetricRecord({"app": 1.0})})
                reply = Message(content, reply_to=m)
                reply.metadata.__dict__["_src_node_id"] = m.metadata.dst_node_id
                out.append(reply)
        return out

    def get_node_ids(self):
        return [11, 22]


def test_measuring_grid_logs_one_event_per_reply(tmp_path):
    log = EventLog(tmp_path / "events.jsonl")
    seen = []
    grid = MeasuringGrid(_FakeGrid(), log, client_of={11: 0, 22: 1}, round_of=lambda: 3,
                         on_reply=lambda r, c, s: seen.append((r, c, s)))
    arrays = [np.arange(1000, dtype=np.float32)]
    msgs = [_fit_message(arrays, 11), _fit_message(arrays, 22)]
    expected_down = message_bytes(_fit_message(arrays, 11))
    replies = list(grid.send_and_receive(msgs))
    log.close()
    assert len(replies) == 2
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert sorted(e["client_id"] for e in events) == [0, 1]
    for e in events:
        assert e["event"] == "message" and e["round"] == 3 and e["stage"] == "fit"
        assert abs(e["bytes_down"] - expected_down) <= 2 and e["bytes_up"] > 0
        assert e["compute_s"] == 0.5 and e["num_examples"] == 7 and e["t_replied"] >= e["t_pushed"] >= e["t_sent"]
        # the ServerApp's own push and pull: both messages went in one push and came back in one pull
        assert e["t_replied"] >= e["t_pull"] >= e["t_pushed"] and e["pushed_with"] == 2 and e["pulled_with"] == 2
    assert sorted(seen) == [(3, 0, "fit"), (3, 1, "fit")]
    # fedbw's record travelled (counted in bytes_up) but the app gets its reply without it
    assert all(MEASURE_RECORD not in r.content and "metrics" in r.content for r in replies)


def test_measure_mod_answers_the_warm_up_itself_and_measures_evaluate_too():
    from fedbw.fl.measure import WARMUP_TYPE

    ctx = Context(run_id=1, node_id=1, node_config={"partition-id": 4}, state=RecordDict(), run_config={})
    warm = Message(RecordDict(), dst_node_id=1, message_type=WARMUP_TYPE)
    warm.metadata.__dict__["_message_id"] = "w1"
    reply = measure_mod(warm, ctx, lambda m, c: pytest.fail("the app saw the warm-up"))
    assert reply.content.config_records[MEASURE_RECORD]["partition_id"] == 4
    ev = Message(RecordDict({"config": ConfigRecord({"server-round": 2})}), dst_node_id=1, message_type="evaluate")
    out = measure_mod(ev, ctx, lambda m, c: _reply_to(m, RecordDict({"metrics": MetricRecord({"loss": 1.0})})))
    rec = out.content.config_records[MEASURE_RECORD]
    assert rec["t_app_s"] >= 0 and "compute_s" not in rec  # the app reported no training time


def test_measuring_grid_does_not_log_outside_rounds(tmp_path):
    log = EventLog(tmp_path / "events.jsonl")
    grid = MeasuringGrid(_FakeGrid(), log, client_of={11: 0}, round_of=lambda: 0)
    list(grid.send_and_receive([_fit_message([np.zeros(3, np.float32)], 11)]))
    log.close()
    assert (tmp_path / "events.jsonl").read_text() == ""
