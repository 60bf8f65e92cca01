"""Measured messages: typed, validated, written whole and read back; a bad line is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedbw.errors import ConfigError
from fedbw.results.messages import MeasuredMessage, message_from_json, read_messages, write_messages


def _message(**kw: object) -> MeasuredMessage:
    base = dict(round=1, client_id=0, stage="train", bytes_down=10.0, bytes_up=12.0, flower_bytes_down=9.0,
                flower_bytes_up=11.0, t_down_s=0.5, t_up_s=0.7, t_compute_s=1.0, t_framework_s=2.0, total_s=4.2,
                parts={"clientapp_start_s": 1.2}, objects_down=4, objects_up=4, run="unshaped", model="mlp")
    return MeasuredMessage(**{**base, **kw})  # type: ignore[arg-type]


def test_messages_round_trip_with_their_head(tmp_path: Path) -> None:
    msgs = [_message(), _message(client_id=1, launch_s=2.0, error=None)]
    path = write_messages(tmp_path / "m.jsonl", msgs, {"dilation": 2.0})
    head, back = read_messages(path)
    assert head["dilation"] == 2.0 and head["schema"] == "fedbw.measured-messages"
    assert back == msgs


def test_a_bad_message_is_named_by_file_line_and_field(tmp_path: Path) -> None:
    path = write_messages(tmp_path / "m.jsonl", [_message()])
    lines = path.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["t_down_s"] = "slow"
    path.write_text("\n".join([lines[0], json.dumps(bad)]) + "\n")
    with pytest.raises(ConfigError, match=r"m\.jsonl:2: not a valid measured message \(t_down_s"):
        read_messages(path)
    with pytest.raises(ConfigError, match="unknown_field"):
        message_from_json({**_message().to_json(), "unknown_field": 1}, "x")
    with pytest.raises(ConfigError, match="no measured-messages file"):
        read_messages(tmp_path / "missing.jsonl")


def test_a_download_met_the_push_only_when_it_began_well_inside_it() -> None:
    assert _message(down_before_pushed_s=0.32).met_push() is True
    assert _message(down_before_pushed_s=0.0).met_push() is False  # began after the push ended
    assert _message(down_before_pushed_s=0.04).met_push() is False  # within the 50 ms a stamp can be off
    assert _message().met_push() is None  # the run did not log the push's end
