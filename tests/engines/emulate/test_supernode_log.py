from __future__ import annotations

from fedbw.processes import LogLine
from fedbw.engines.emulate.supernode_log import is_receiving, parse_supernode_log

LOG = """INFO :      SuperNode ID: 123
INFO :
INFO :      [RUN 99, ROUND 0]
INFO :      Receiving: query.fedbw-hello message (ID: aa)
INFO :      Received successfully
INFO :      Start `flwr-clientapp` process
INFO :      [RUN 99, ROUND 0]
INFO :      Sending: query.fedbw-hello message (ID: bb)
INFO :      Sent successfully
INFO :      [RUN 99, ROUND 1]
INFO :      Receiving: train message (ID: cc)
INFO :      Received successfully
INFO :      Start `flwr-clientapp` process
INFO :      [RUN 99, ROUND 1]
INFO :      Sending: train message (ID: dd)
INFO :      Sent successfully
INFO :      [RUN 99, ROUND 2]
INFO :      Receiving: train message (ID: ee)
"""


def _lines() -> list[LogLine]:
    return [LogLine(float(i), t) for i, t in enumerate(LOG.splitlines())]


def test_spans_follow_the_log() -> None:
    spans = parse_supernode_log(_lines())
    assert [(s.message_type, s.group, s.complete) for s in spans] == [
        ("query.fedbw-hello", "0", True), ("train", "1", True), ("train", "2", False)]
    train = spans[1]
    assert (train.t_receiving_s, train.t_received_s, train.t_app_start_s, train.t_sending_s, train.t_sent_s) == (
        10.0, 11.0, 12.0, 14.0, 15.0)
    assert train.startup_s == 1.0 and train.app_s == 3.0
    assert spans[2].app_s is None


def test_is_receiving() -> None:
    assert is_receiving("INFO :      Receiving: train message (ID: x)") == "train"
    assert is_receiving("INFO :      Sending: train message (ID: x)") is None
