import json

import pytest

from fedbw.errors import ConfigError, FedbwError
from fedbw.results.records import (ClientRoundRecord, RecordWriter, RoundRecord, StageRecord, header, load_records,
                                   read_records)


def _records():
    c = ClientRoundRecord("r", "estimate", 1, 3, "home-30", [StageRecord("fit", 10.0, 20.0, 0.1, 1.0, 0.2)])
    r = RoundRecord("r", "estimate", 1, 1, 1.3, 0.3, 1.0, 0.0, {"fit": 1.3}, 10.0, 20.0, loss=0.5, accuracy=0.9)
    return c, r


def test_roundtrip_and_derived_fields(tmp_path):
    c, r = _records()
    with RecordWriter(tmp_path / "records.jsonl") as w:
        w.write([c, r])
    head, line = map(json.loads, (tmp_path / "records.jsonl").read_text().splitlines()[:2])
    assert head["kind"] == "header" and head["schema_version"] == 4
    assert line["bytes_up"] == 20.0 and line["t_total_s"] == pytest.approx(1.3)
    clients, rounds = load_records(tmp_path)
    assert clients[0].stages[0].t_up_s == 0.2 and clients[0].bytes_down == 10.0
    assert rounds[0].comm_fraction == pytest.approx(0.3 / 1.3) and not rounds[0].bandwidth_bound


def test_torn_last_line_is_skipped_but_damage_elsewhere_is_reported(tmp_path):
    c, r = _records()
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as w:
        w.write([c, r])
    with path.open("a") as fh:
        fh.write('{"kind": "round", "ro')
    assert len(load_records(path)[1]) == 1
    f = read_records(path)
    assert len(f.rounds) == 1 and f.notes[0].startswith(f"{path}:4: the last line is cut short")
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "garbage", *lines[1:]]) + "\n")
    with pytest.raises(ConfigError, match=r"records.jsonl:2: not a JSON record; the file is damaged"):
        load_records(path)


def test_files_of_another_version_or_kind_are_refused_with_the_line(tmp_path):
    c, r = _records()
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(c.to_json()) + "\n")  # fedbw 0.1 wrote records without a header
    with pytest.raises(ConfigError, match="fedbw 0.1"):
        load_records(path)
    path.write_text(json.dumps({**header("r", "estimate"), "schema_version": 9}) + "\n")
    with pytest.raises(ConfigError, match="schema version 9"):
        load_records(path)
    path.write_text('{"some": "json"}\n')
    with pytest.raises(ConfigError, match=":1: not a fedbw records file"):
        load_records(path)
    bad = {**r.to_json(), "round_time_s": "slow"}
    path.write_text(json.dumps(header("r", "estimate")) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ConfigError, match=r":2: not a valid round record \(round_time_s"):
        load_records(path)
    path.write_text(json.dumps(header("r", "estimate")) + "\n" + json.dumps({**r.to_json(), "kind": "x"}) + "\n")
    with pytest.raises(ConfigError, match=":2: unknown record kind 'x'"):
        load_records(path)
    path.write_text(json.dumps(header("r", "estimate")) + "\n" + json.dumps({**r.to_json(), "surprise": 1}) + "\n")
    with pytest.raises(ConfigError, match="surprise"):
        load_records(path)


def test_infinite_times_stay_readable(tmp_path):
    c, r = _records()
    r.round_time_s = float("inf")
    with RecordWriter(tmp_path / "x.jsonl") as w:
        w.write([r])
    assert json.loads((tmp_path / "x.jsonl").read_text().splitlines()[1])["round_time_s"] == "inf"
    assert load_records(tmp_path / "x.jsonl")[1][0].round_time_s == float("inf")


def test_missing_records():
    with pytest.raises(FedbwError, match="no records"):
        load_records("/nonexistent/run")


def test_a_version_2_file_still_reads_its_new_fields_empty(tmp_path):
    """Version 3 only added optional fields (a model round's interval, the header's model stamp)."""
    c, r = _records()
    with RecordWriter(tmp_path / "records.jsonl") as w:
        w.write([c, r])
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    head = {**json.loads(lines[0]), "schema_version": 2}
    row = {k: v for k, v in json.loads(lines[2]).items() if k not in ("round_interval_s", "round_median_s")}
    (tmp_path / "records.jsonl").write_text("\n".join([json.dumps(head), lines[1], json.dumps(row)]) + "\n")
    _, rounds = load_records(tmp_path)
    assert rounds[0].round_interval_s is None and rounds[0].round_time_s == 1.3
    (tmp_path / "records.jsonl").write_text("\n".join([json.dumps({**head, "schema_version": 1}), lines[1]]) + "\n")
    with pytest.raises(ConfigError, match="schema version 1"):
        load_records(tmp_path)
