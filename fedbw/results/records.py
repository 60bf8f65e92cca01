"""The record schema shared by estimate, simulate and emulate, and its append-only file.

A records file (``records.jsonl``) starts with a header line (``kind = "header"``: schema name and
version, run id, engine), then holds one JSON line per client per round (``kind = "client"``) and one
per round (``kind = "round"``), appended and fsynced as each round ends: an interrupted run keeps every
finished round, and two runs of any engines can be compared line by line. Records are pydantic
dataclasses: every line is validated when it is read, and a file of another schema version, a damaged
line or a line that is not a fedbw record is a clear error naming the file and the line.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Literal, Mapping, Sequence

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass as validated

from fedbw.errors import ConfigError
from fedbw.files.versioned import RECORDS
from fedbw.netmodel.timeline import BANDWIDTH_BOUND_FRACTION
from fedbw.results.host_record import HostRound
from fedbw.privacy.record import PrivacyRound

#: Version 2: header line, validated records (fedbw 0.2). 1: no header (fedbw 0.1).
SCHEMA, SCHEMA_VERSION = RECORDS.schema, RECORDS.version
_STRICT = ConfigDict(extra="forbid")


@validated(config=_STRICT)
class StageRecord:
    """One client's share of one stage: bytes each way and where its time went."""

    stage: str
    bytes_down: float
    bytes_up: float
    t_down_s: float
    t_compute_s: float
    t_up_s: float
    t_framework_s: float = 0.0  #: Flower's own time (polling, process start-up, serialisation)
    #: emulate only: time of this stage the host, not the link, held (link idle mid-message, slow start)
    t_host_s: float | None = None

    @property
    def t_total_s(self) -> float:
        return self.t_down_s + self.t_compute_s + self.t_up_s + self.t_framework_s


@validated(config=_STRICT)
class ClientRoundRecord:
    run_id: str
    engine: str
    round: int
    client_id: int
    profile: str
    stages: list[StageRecord]
    dropped: bool = False
    #: the server closed a stage (a deadline, enough replies: ``[round]``) before it had this client's reply:
    #: its bytes and compute were spent, its update not used
    late: bool = False
    train_loss: float | None = None
    num_examples: int | None = None
    kind: Literal["client"] = "client"

    #: Written into every line for people and other tools; recomputed (and ignored) on load.
    DERIVED = ("bytes_down", "bytes_up", "t_down_s", "t_up_s", "t_compute_s", "t_framework_s", "t_total_s")

    @property
    def bytes_down(self) -> float:
        return sum(s.bytes_down for s in self.stages)

    @property
    def bytes_up(self) -> float:
        return sum(s.bytes_up for s in self.stages)

    @property
    def t_down_s(self) -> float:
        return sum(s.t_down_s for s in self.stages)

    @property
    def t_up_s(self) -> float:
        return sum(s.t_up_s for s in self.stages)

    @property
    def t_compute_s(self) -> float:
        return sum(s.t_compute_s for s in self.stages)

    @property
    def t_framework_s(self) -> float:
        return sum(s.t_framework_s for s in self.stages)

    @property
    def t_total_s(self) -> float:
        return sum(s.t_total_s for s in self.stages)

    def to_json(self) -> dict[str, Any]:
        """The record as plain data (what ``dataclasses.asdict`` gives, plus :attr:`DERIVED`), built field
        by field: every value is a str, a number or None, so nothing needs asdict's deep copy — a round of
        100,000 clients is written in a fraction of the time."""
        d = {k: getattr(self, k) for k in _CLIENT_FIELDS}
        d["stages"] = [{k: getattr(st, k) for k in _STAGE_FIELDS} for st in self.stages]
        # the DERIVED sums in one pass, added in the same order as the properties add them
        bytes_down = bytes_up = t_down = t_up = t_compute = t_framework = t_total = 0
        for st in self.stages:
            bytes_down += st.bytes_down
            bytes_up += st.bytes_up
            t_down += st.t_down_s
            t_up += st.t_up_s
            t_compute += st.t_compute_s
            t_framework += st.t_framework_s
            t_total += st.t_total_s
        d.update(bytes_down=bytes_down, bytes_up=bytes_up, t_down_s=t_down, t_up_s=t_up, t_compute_s=t_compute,
                 t_framework_s=t_framework, t_total_s=t_total)
        return d


_STAGE_FIELDS = tuple(f.name for f in fields(StageRecord))
_CLIENT_FIELDS = tuple(f.name for f in fields(ClientRoundRecord) if f.name != "stages")


@validated(config=_STRICT)
class RoundRecord:
    run_id: str
    engine: str
    round: int
    num_clients: int
    round_time_s: float  #: network clock (virtual in estimate/simulate, wall in emulate)
    comm_time_s: float  #: communication on the critical path
    compute_time_s: float
    framework_time_s: float
    stage_times_s: dict[str, float]
    bytes_down_total: float
    bytes_up_total: float
    loss: float | None = None
    accuracy: float | None = None
    epsilon: float | None = None
    wall_time_s: float | None = None  #: how long this round took to run on this machine
    kind: Literal["round"] = "round"
    extra: dict[str, Any] = field(default_factory=dict)
    privacy: PrivacyRound | None = None  #: ε's sampling, adjacency and δ; SecAgg+ clipping and wrapping
    host: HostRound | None = None  #: emulate only: the host's share of the round (host-bound rounds)
    #: estimate/simulate with Flower's costs: the round's central 80 % interval (10th, 90th percentile)
    #: and median over Flower's unknown poll phases and the calibration's intervals (netmodel/spread.py)
    round_interval_s: tuple[float, float] | None = None
    round_median_s: float | None = None
    late_clients: int = 0  #: sampled clients whose reply missed the close (``[round]``)
    #: their uplink bytes, sent and not used (None: not measured — emulate writes a round's records when the
    #: server closes it, before the late uploads end)
    wasted_bytes_up: float | None = 0.0
    #: fewer replies than ``round.min_replies`` by the close: the server kept the previous model
    abandoned: bool = False
    #: sampled clients that went off line before their reply (a fault, SecAgg+'s dropout, availability)
    dropped_clients: int = 0

    DERIVED = ("comm_fraction", "bandwidth_bound", "host_bound", "replies")

    @property
    def replies(self) -> int:
        """The updates the server used: the sampled clients less the late and the dropped ones."""
        return self.num_clients - self.late_clients - self.dropped_clients

    @property
    def comm_fraction(self) -> float:
        return self.comm_time_s / self.round_time_s if self.round_time_s > 0 else 0.0

    @property
    def bandwidth_bound(self) -> bool:
        return self.comm_fraction > BANDWIDTH_BOUND_FRACTION

    @property
    def host_bound(self) -> bool | None:
        """True when the emulating host held too much of the round (None: no host, a model engine)."""
        return None if self.host is None else self.host.bound

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.update({k: getattr(self, k) for k in self.DERIVED})
        return d


def engine_client_records(run_id: str, engine: str, round_index: int, rows: Iterable[Sequence[Any]],
                          profile_of: Callable[[int], str]) -> list[ClientRoundRecord]:
    """One round's client records from numbers a model engine computed itself.

    Each row holds one client's stage: (client_id, stage, bytes_down, bytes_up, t_down_s, t_compute_s,
    t_up_s, t_framework_s, …) — a timeline's :class:`~fedbw.netmodel.timeline.ClientStageTiming` starts
    with these fields, and its ``late`` says whether the client missed a stage's close; a client's stages
    keep the order of its rows. The records are built without a
    second validation, in one pass: at 100,000 clients per round validating every record, or a constructor
    call per record, would cost more than the model. Records read back from a file are always validated
    (:func:`load_records`)."""
    new = object.__new__
    by_client: dict[int, list[StageRecord]] = {}
    stages_of = by_client.get
    late: set[int] = set()
    for row in rows:
        if getattr(row, "late", 0.0) > 0.5:
            late.add(row[0])
        rec = new(StageRecord)
        rec.__dict__ = {"stage": row[1], "bytes_down": float(row[2]), "bytes_up": float(row[3]),
                        "t_down_s": float(row[4]), "t_compute_s": float(row[5]), "t_up_s": float(row[6]),
                        "t_framework_s": float(row[7]), "t_host_s": None}
        if (stages := stages_of(row[0])) is None:
            by_client[row[0]] = [rec]
        else:
            stages.append(rec)
    out = []
    for cid, stages in by_client.items():
        rec = new(ClientRoundRecord)
        rec.__dict__ = {"run_id": run_id, "engine": engine, "round": round_index, "client_id": cid,
                        "profile": profile_of(cid), "stages": stages, "dropped": False, "late": cid in late,
                        "train_loss": None, "num_examples": None, "kind": "client"}
        out.append(rec)
    return out


def _clean(value: Any) -> Any:
    """JSON has no inf/NaN: write them as the strings "inf", "-inf", "nan" (read back as floats), never
    as an unreadable file. An infinite time is a transfer over a link that is down."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


#: One encoder for every line (``json.dumps`` with options builds a new one per call): sorted keys, and
#: inf/NaN refused so that :func:`_clean` turns them into strings.
_FINITE_JSON = json.JSONEncoder(sort_keys=True, allow_nan=False)


def header(run_id: str | None, engine: str | None, model: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A records file's first line; ``model``: what made a model engine's numbers (the model's version and
    the calibration's fingerprint, :meth:`fedbw.plan.Plan.model_stamp`), None for emulate."""
    from fedbw import __version__

    head = {"kind": "header", **RECORDS.stamp(), "run_id": run_id, "engine": engine, "fedbw": __version__}
    if model is not None:
        head["made_by"] = dict(model)
    return head


class RecordWriter:
    """Append-only JSONL writer; the header goes first into a new file, and each round is flushed and
    fsynced before the next starts."""

    def __init__(self, path: str | Path, *, run_id: str | None = None, engine: str | None = None,
                 model: Mapping[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        self._fh: IO[str] = self.path.open("a", encoding="utf-8")
        if fresh:
            self._append([header(run_id, engine, model)])

    def _append(self, lines: Iterable[dict[str, Any]]) -> None:
        try:
            for line in lines:
                try:  # nearly every line is finite: clean (walk) only the lines that are not
                    text = _FINITE_JSON.encode(line)
                except ValueError:
                    text = _FINITE_JSON.encode(_clean(line))
                self._fh.write(text + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:  # a disk that fills mid-run: one line naming this file, not a traceback
            from fedbw.files.atomic import write_error

            raise write_error(self.path, exc) from None

    def write(self, records: Iterable[ClientRoundRecord | RoundRecord]) -> None:
        self._append(rec.to_json() for rec in records)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_ADAPTERS: dict[str, tuple[type, TypeAdapter[Any]]] = {
    "client": (ClientRoundRecord, TypeAdapter(ClientRoundRecord)),
    "round": (RoundRecord, TypeAdapter(RoundRecord)),
}


@dataclass
class RecordsFile:
    """A records file as read: its header, its records, and what was skipped (and why)."""

    path: Path
    header: dict[str, Any]
    clients: list[ClientRoundRecord] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  #: e.g. a torn last line after a crash, skipped


def _records_path(path: str | Path) -> Path:
    path = Path(path)
    if path.is_dir():
        path = path / "records.jsonl"
    if not path.exists():
        raise ConfigError(f"no records at {path}; pass a run directory or its records.jsonl")
    return path


def _check_header(path: Path, first: dict[str, Any] | None) -> dict[str, Any]:
    if first is not None and first.get("kind") in ("client", "round"):
        raise ConfigError(f"{path}: written by fedbw 0.1 (records schema 1, no header); this fedbw reads "
                          f"schema {SCHEMA_VERSION}: rerun the experiment to get records it can read")
    if first is None or first.get("kind") != "header":
        raise ConfigError(f"{path}:1: not a fedbw records file (no {SCHEMA!r} header); pass the records.jsonl "
                          f"of a fedbw run directory")
    why = RECORDS.problem(first, path)
    if why is not None:
        raise ConfigError(f"{why} (it was written by fedbw {first.get('fedbw')})")
    return first


def read_records(path: str | Path) -> RecordsFile:
    """Read and validate a records file (a run directory works too).

    A torn last line (a crash mid-write) is skipped and said in ``notes``; any other damaged or foreign
    line is a ConfigError naming the file and the line.
    """
    path = _records_path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    # the writer ends every line with a newline in the same write: a last line without one was cut short
    torn_end = bool(text) and not text.endswith("\n")
    numbered = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip()]
    out: RecordsFile | None = None
    for k, (lineno, line) in enumerate(numbered):
        where = f"{path}:{lineno}"
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            if out is None:
                raise ConfigError(f"{where}: not a fedbw records file (the first line is not JSON); pass the "
                                  f"records.jsonl of a fedbw run directory") from None
            if k == len(numbered) - 1 and (torn_end or not line.rstrip().endswith("}")):
                out.notes.append(f"{where}: the last line is cut short (the run stopped while writing it); "
                                 f"skipped")
                break
            raise ConfigError(f"{where}: not a JSON record; the file is damaged") from None
        if not isinstance(d, dict):
            raise ConfigError(f"{where}: not a fedbw record (a JSON {type(d).__name__})")
        if out is None:
            out = RecordsFile(path, _check_header(path, d))
            continue
        kind = d.get("kind")
        if kind not in _ADAPTERS:
            raise ConfigError(f"{where}: unknown record kind {kind!r}; expected 'client' or 'round'")
        cls, adapter = _ADAPTERS[kind]
        for name in cls.DERIVED:
            d.pop(name, None)
        try:
            rec = adapter.validate_python(d)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"{where}: not a valid {kind} record ({loc}: {first['msg']})") from None
        (out.clients if kind == "client" else out.rounds).append(rec)
    if out is None:
        raise ConfigError(f"{path}: empty; not a fedbw records file (no {SCHEMA!r} header)")
    return out


def load_records(path: str | Path) -> tuple[list[ClientRoundRecord], list[RoundRecord]]:
    """Client and round records of a records file or run directory (see :func:`read_records`)."""
    f = read_records(path)
    return f.clients, f.rounds
