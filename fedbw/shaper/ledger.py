"""Byte and time ledger: per client, direction and connection, so engines can attribute time.

"in" is what the proxy read from the sender, "out" what it delivered to the receiver's socket (after
rate and delay): out timestamps are the ones that match what the receiver sees. Timestamps are
``time.perf_counter()`` seconds (CLOCK_MONOTONIC on Linux: comparable across processes of one host).

Counters are plain attributes updated on the event loop thread; :meth:`Ledger.snapshot` copies them
into plain dicts. With a path, one JSON line is appended per finished connection and one summary line
per client at close (schema in docs/shaper.md).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from fedbw.errors import ConfigError
from fedbw.files.versioned import SHAPER_LEDGER



@dataclass(slots=True)
class DirStats:
    """Bytes and first/last byte times of one direction (a connection's or a client's total)."""

    bytes_in: int = 0
    bytes_out: int = 0
    bytes_dropped: int = 0
    first_in_s: float | None = None
    last_in_s: float | None = None
    first_out_s: float | None = None
    last_out_s: float | None = None

    def add_in(self, n_bytes: int, t_s: float) -> None:
        self.bytes_in += n_bytes
        if self.first_in_s is None:
            self.first_in_s = t_s
        self.last_in_s = t_s

    def add_out(self, n_bytes: int, t_s: float) -> None:
        self.bytes_out += n_bytes
        if self.first_out_s is None:
            self.first_out_s = t_s
        self.last_out_s = t_s

    def as_dict(self) -> dict[str, Any]:
        return {
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "bytes_dropped": self.bytes_dropped,
            "first_in_s": self.first_in_s,
            "last_in_s": self.last_in_s,
            "first_out_s": self.first_out_s,
            "last_out_s": self.last_out_s,
        }


@dataclass(slots=True)
class ConnRecord:
    """One proxied TCP connection of one client."""

    conn_id: int
    client_id: str
    peer: str
    opened_s: float
    closed_s: float | None = None
    error: str | None = None
    up: DirStats = field(default_factory=DirStats)
    down: DirStats = field(default_factory=DirStats)

    def as_dict(self) -> dict[str, Any]:
        return {
            "conn_id": self.conn_id,
            "client_id": self.client_id,
            "peer": self.peer,
            "opened_s": self.opened_s,
            "closed_s": self.closed_s,
            "error": self.error,
            "up": self.up.as_dict(),
            "down": self.down.as_dict(),
        }


@dataclass(slots=True)
class ClientStats:
    """Live totals of one client over all its connections."""

    client_id: str
    up: DirStats = field(default_factory=DirStats)
    down: DirStats = field(default_factory=DirStats)
    connections_open: int = 0
    connections_total: int = 0
    connections_failed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "connections_open": self.connections_open,
            "connections_total": self.connections_total,
            "connections_failed": self.connections_failed,
            "up": self.up.as_dict(),
            "down": self.down.as_dict(),
        }


class Ledger:
    """Per-client totals and per-connection records; optional JSONL output."""

    def __init__(self, client_ids: list[str], *, path: str | os.PathLike[str] | None = None) -> None:
        self.t0_s = time.perf_counter()
        self.t0_unix_s = time.time()
        self.clients: dict[str, ClientStats] = {cid: ClientStats(cid) for cid in client_ids}
        self.connections: list[ConnRecord] = []
        self._next_id = 0
        self._path = Path(path) if path is not None else None
        self._file: IO[str] | None = None

    def open_file(self, meta: dict[str, Any] | None = None) -> None:
        """Open the JSONL file (append) and write the run's start line."""
        if self._path is None or self._file is not None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self._path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._write({
            "type": "start",
            **SHAPER_LEDGER.stamp(),
            "t0_s": self.t0_s,
            "t0_unix_s": self.t0_unix_s,
            **(meta or {}),
        })

    def open_connection(self, client_id: str, peer: str) -> ConnRecord:
        self._next_id += 1
        rec = ConnRecord(self._next_id, client_id, peer, time.perf_counter())
        self.connections.append(rec)
        stats = self.clients[client_id]
        stats.connections_open += 1
        stats.connections_total += 1
        return rec

    def close_connection(self, rec: ConnRecord, error: str | None = None) -> None:
        if rec.closed_s is not None:
            return
        rec.closed_s = time.perf_counter()
        if error is not None and rec.error is None:
            rec.error = error
        stats = self.clients[rec.client_id]
        stats.connections_open -= 1
        if rec.error is not None:
            stats.connections_failed += 1
        self._write({"type": "conn", **rec.as_dict()})

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict copy of everything: safe to keep, serialize or compare later."""
        return {
            "t0_s": self.t0_s,
            "t0_unix_s": self.t0_unix_s,
            "clients": {cid: s.as_dict() for cid, s in self.clients.items()},
            "connections": [r.as_dict() for r in self.connections],
        }

    def close(self) -> None:
        """Write one summary line per client and close the file."""
        if self._file is None:
            return
        for stats in self.clients.values():
            self._write({"type": "client", "t_end_s": time.perf_counter(), **stats.as_dict()})
        self._file.close()
        self._file = None

    def _write(self, obj: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(obj, separators=(",", ":")) + "\n")
            self._file.flush()


def read_ledger(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every line of a ledger file, each run's ``start`` line checked (a ``fedbw shape`` service appends a
    run per start); ConfigError naming the file for a foreign or other-version ledger or a damaged line.
    A last line cut short by a crash is left out."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the shaper ledger ({exc})") from None
    lines = text.split("\n")
    rows: list[dict[str, Any]] = []
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError:
            if lineno == len(lines):  # no newline after it: the writer was stopped mid-line
                break
            raise ConfigError(f"{path}:{lineno}: not a JSON line; the ledger is damaged") from None
        if not rows or (isinstance(row, dict) and row.get("type") == "start"):
            SHAPER_LEDGER.check(row, f"{path}:{lineno}")
        rows.append(row)
    return rows
