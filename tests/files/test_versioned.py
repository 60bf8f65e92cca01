"""Every format fedbw writes goes through one helper: written by fedbw's own writer with the format's
stamp, read back by fedbw's own reader, and refused — with a message naming the file — when its
version or its schema name differs. A format registered without a case here fails the suite."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from fedbw.errors import ConfigError, FedbwError, RunError
from fedbw.files.versioned import FORMATS, SCHEMA_KEY, VERSION_KEY, FileFormat, register

#: A case writes a file with fedbw's writer and returns (the file, a reader that raises on a bad head).
Case = Callable[[Path], tuple[Path, Callable[[], object]]]


def _json_lines_head(path: Path) -> tuple[dict, list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), lines[1:]


def _records(tmp: Path):
    from fedbw.results.records import RecordWriter, read_records

    path = tmp / "records.jsonl"
    RecordWriter(path, run_id="r", engine="estimate").close()
    return path, lambda: read_records(path)


def _plan(tmp: Path):
    from fedbw.config import config_from_dict
    from fedbw.plan import Plan, build_plan

    path = tmp / "plan.json"
    path.write_text(json.dumps(build_plan(config_from_dict({}), device="cpu").to_json()))
    return path, lambda: Plan.from_json(json.loads(path.read_text()), source=str(path))


def _events(tmp: Path):
    from fedbw.engines.measured import RoundAssembler
    from fedbw.files.versioned import EVENTS
    from fedbw.fl.events import START, EventLog

    path = tmp / "events.jsonl"
    log = EventLog(path)
    log.emit(START, **EVENTS.stamp())
    log.close()

    def read() -> None:
        assembler = RoundAssembler()
        assembler.add(json.loads(path.read_text().splitlines()[0]))
        if assembler.error:
            raise RunError(assembler.error)

    return path, read


def _calibration(tmp: Path):
    from fedbw.calibration.file import default_calibration, read_calibration, write_calibration

    path = write_calibration(tmp / "cal.toml", default_calibration())
    return path, lambda: read_calibration(path)


def _sweep(tmp: Path):
    from fedbw.results.sweep_index import SweepIndex, read_index, write_index

    write_index(tmp, SweepIndex("s", "c.toml", "0" * 64, "estimate", [], [], [], "2026-12-04T00:00:00Z"))
    return tmp / "sweep.json", lambda: read_index(tmp)


def _link_series(tmp: Path):
    from fedbw.shaper.series import LinkSeries, SeriesReader

    path = tmp / "link-series.jsonl"
    LinkSeries(["0"]).dump(path)

    def read() -> None:
        try:
            SeriesReader(path).read()
        except ValueError as exc:  # the reader's own error type, which the engine turns into a RunError
            raise RunError(str(exc)) from None

    return path, read


def _shaper_ledger(tmp: Path):
    from fedbw.shaper.ledger import Ledger, read_ledger

    path = tmp / "ledger.jsonl"
    ledger = Ledger(["a"], path=path)
    ledger.open_file()
    ledger.close()
    return path, lambda: read_ledger(path)


def _emulate(tmp: Path):
    from fedbw.engines.emulate.run import SUMMARY_FILE, read_summary
    from fedbw.files.atomic import write_json_atomic
    from fedbw.files.versioned import EMULATE

    path = write_json_atomic(tmp / SUMMARY_FILE, {**EMULATE.stamp(), "messages": []})
    return path, lambda: read_summary(tmp)


def _measured_messages(tmp: Path):
    from fedbw.results.messages import read_messages, write_messages

    path = write_messages(tmp / "cal.messages.jsonl", [], {"aggregation": []})
    return path, lambda: read_messages(path)


def _allreduce(tmp: Path):
    from fedbw.results.compared import read_allreduce, write_allreduce
    from fedbw.results.estimates import FabricEstimate

    path = write_allreduce(tmp, "resnet18", [FabricEstimate("ib-ndr400", "IB", 8, 4.6e7, "ring", 0.002, 23.0, 40.0)])
    return path, lambda: read_allreduce(tmp)


CASES: dict[str, Case] = {
    "fedbw.records": _records, "fedbw.plan": _plan, "fedbw.events": _events, "fedbw.calibration": _calibration,
    "fedbw.sweep": _sweep, "fedbw.link-series": _link_series, "fedbw.shaper-ledger": _shaper_ledger,
    "fedbw.emulate": _emulate, "fedbw.measured-messages": _measured_messages,
    "fedbw.allreduce": _allreduce,
}


def _rewrite_head(path: Path, change: Callable[[dict], None]) -> None:
    """Apply ``change`` to the file's head, wherever this format keeps it."""
    if path.suffix == ".toml":
        text = path.read_text()
        head = {"schema": "fedbw.calibration", "schema_version": FORMATS["fedbw.calibration"].version}
        new = dict(head)
        change(new)
        lines = [f"{k} = {json.dumps(v)}" for k, v in new.items() if v is not None]
        old = "\n".join(f"{k} = {json.dumps(v)}" for k, v in head.items())
        assert old in text
        path.write_text(text.replace(old, "\n".join(lines)))
        return
    if path.suffix == ".jsonl":
        head, rest = _json_lines_head(path)
        change(head)
        path.write_text("\n".join([json.dumps(head)] + rest) + "\n")
        return
    data = json.loads(path.read_text())
    target = data["plan"] if "plan" in data and isinstance(data["plan"], dict) else data
    change(target)
    path.write_text(json.dumps(data))


def test_every_registered_format_has_a_case() -> None:
    assert set(FORMATS) == set(CASES), "add a case for each new format (and remove those of dropped ones)"


@pytest.mark.parametrize("schema", sorted(CASES))
def test_a_fresh_file_reads_back(tmp_path: Path, schema: str) -> None:
    path, read = CASES[schema](tmp_path)
    read()
    assert schema in path.read_text()  # the writer stamped it


@pytest.mark.parametrize("schema", sorted(CASES))
def test_another_version_is_refused_naming_the_file(tmp_path: Path, schema: str) -> None:
    fmt = FORMATS[schema]
    path, read = CASES[schema](tmp_path)
    _rewrite_head(path, lambda head: head.update({VERSION_KEY: fmt.version + 1}))
    with pytest.raises((ConfigError, RunError)) as err:
        read()
    msg = str(err.value)
    assert f"schema version {fmt.version + 1}" in msg and f"reads version {fmt.version}" in msg
    assert fmt.remedy in msg


@pytest.mark.parametrize("schema", sorted(CASES))
def test_a_file_without_the_schema_name_is_refused(tmp_path: Path, schema: str) -> None:
    """fedbw 0.2 wrote some formats with a version but no schema name (or another spelling): refused."""
    path, read = CASES[schema](tmp_path)
    _rewrite_head(path, lambda head: head.update({SCHEMA_KEY: None}))
    with pytest.raises((ConfigError, RunError), match=re.escape(f"not a fedbw {FORMATS[schema].noun}")):
        read()


def test_the_helper_names_the_source_and_what_was_found() -> None:
    fmt = FileFormat("fedbw.test", 3, "test file", "make a new one")
    assert fmt.problem({**fmt.stamp()}, "x.json") is None
    assert fmt.problem({"schema": "fedbw.other", "schema_version": 3}, "x.json") == \
        "x.json: a 'fedbw.other' file, not a fedbw test file ('fedbw.test')"
    assert fmt.problem([1, 2], "x.json").startswith("x.json: not a fedbw test file")
    with pytest.raises(RunError, match="x.json: test file of schema version 2, this fedbw reads version 3"):
        fmt.check({"schema": "fedbw.test", "schema_version": 2}, "x.json", error=RunError)
    assert issubclass(ConfigError, FedbwError)


def test_a_schema_name_is_declared_once() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        register("fedbw.records", 9, "records file", "-")
