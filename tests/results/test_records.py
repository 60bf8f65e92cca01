import json

import pytest

from fedbw.errors import FedbwError
from fedbw.results.records import ClientRoundRecord, RecordWriter, RoundRecord, StageRecord, load_records


def _records():
    c = ClientRoundRecord("r", "estimate", 1, 3, "home-30", [StageRecord("fit", 10.0, 20.0, 0.1, 1.0, 0.2)])
    r = RoundRecord("r", "estimate", 1, 1, 1.3, 0.3, 1.0, 0.0, {"fit": 1.3}, 10.0, 20.0, loss=0.5, accuracy=0.9)
    return c, r


def test_roundtrip_and_derived_fields(tmp_path):
    c, r = _records()
    with RecordWriter(tmp_path / "records.jsonl") as w:
        w.write([c, r])
    line = json.loads((tmp_path / "records.jsonl").read_text().splitlines()[0])
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
    path.write_text("garbage\n" + path.read_text())
    with pytest.raises(FedbwError, match="damaged"):
        load_records(path)


def test_infinite_times_become_null(tmp_path):
    c, r = _records()
    r.round_time_s = float("inf")
    with RecordWriter(tmp_path / "x.jsonl") as w:
        w.write([r])
    assert json.loads((tmp_path / "x.jsonl").read_text())["round_time_s"] is None


def test_missing_records():
    with pytest.raises(FedbwError, match="no records"):
        load_records("/nonexistent/run")
