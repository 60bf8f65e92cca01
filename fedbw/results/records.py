"""The RoundRecord schema shared by estimate, simulate and emulate, and its append-only file.

One JSON line per client per round (``kind = "client"``) and one per round (``kind = "round"``),
appended and flushed as each round ends: an interrupted run keeps every finished round, and two
runs of any engines can be compared line by line.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import IO, Any, Iterable

from fedbw.errors import ConfigError, FedbwError
from fedbw.netmodel.timeline import BANDWIDTH_BOUND_FRACTION

SCHEMA_VERSION = 1


@dataclass
class StageRecord:
    """One client's share of one stage: bytes each way and where its time went."""

    stage: str
    bytes_down: float
    bytes_up: float
    t_down_s: float
    t_compute_s: float
    t_up_s: float
    t_framework_s: float = 0.0  #: emulate: polling and process start-up inside Flower

    @property
    def t_total_s(self) -> float:
        return self.t_down_s + self.t_compute_s + self.t_up_s + self.t_framework_s


@dataclass
class ClientRoundRecord:
    run_id: str
    engine: str
    round: int
    client_id: int
    profile: str
    stages: list[StageRecord]
    dropped: bool = False
    train_loss: float | None = None
    num_examples: int | None = None
    kind: str = "client"

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
        d = asdict(self)
        d.update(bytes_down=self.bytes_down, bytes_up=self.bytes_up, t_down_s=self.t_down_s, t_up_s=self.t_up_s,
                 t_compute_s=self.t_compute_s, t_framework_s=self.t_framework_s, t_total_s=self.t_total_s)
        return d


@dataclass
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
    kind: str = "round"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def comm_fraction(self) -> float:
        return self.comm_time_s / self.round_time_s if self.round_time_s > 0 else 0.0

    @property
    def bandwidth_bound(self) -> bool:
        return self.comm_fraction > BANDWIDTH_BOUND_FRACTION

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(comm_fraction=self.comm_fraction, bandwidth_bound=self.bandwidth_bound)
        return d


def _clean(value: Any) -> Any:
    """JSON has no inf/NaN: write them as null rather than produce an unreadable file."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


class RecordWriter:
    """Append-only JSONL writer; each round is flushed and fsynced before the next starts."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = self.path.open("a", encoding="utf-8")

    def write(self, records: Iterable[ClientRoundRecord | RoundRecord]) -> None:
        for rec in records:
            self._fh.write(json.dumps(_clean(rec.to_json()), sort_keys=True) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _from(cls: type, d: dict[str, Any]) -> Any:
    """Rebuild a record from its JSON, ignoring derived (property) fields and unknown keys."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


def load_records(path: str | Path) -> tuple[list[ClientRoundRecord], list[RoundRecord]]:
    """Read a records.jsonl (a run directory works too). A torn last line (crash) is skipped."""
    path = Path(path)
    if path.is_dir():
        path = path / "records.jsonl"
    if not path.exists():
        raise ConfigError(f"no records at {path}; pass a run directory or its records.jsonl")
    clients: list[ClientRoundRecord] = []
    rounds: list[RoundRecord] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise FedbwError(f"{path}:{i + 1} is not a JSON record; the file is damaged") from None
        if d.get("kind") == "client":
            d["stages"] = [_from(StageRecord, s) for s in d.get("stages", [])]
            clients.append(_from(ClientRoundRecord, d))
        elif d.get("kind") == "round":
            rounds.append(_from(RoundRecord, d))
    return clients, rounds
