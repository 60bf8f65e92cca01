"""What each hardening test tried and what it kept, collected into benchmarks/results/reliability.json.

Why a registry: docs/reliability.md's table must come from what the tests did, not from prose typed
beside them. Every hardening test takes the ``reliability`` fixture, says what it tried and what was
kept, and adds what it measured; the outcome (passed, failed, skipped) comes from pytest itself. With
``FEDBW_RELIABILITY_OUT=benchmarks/results/reliability.json`` set, the session merges its cases into
that file (cases of tests not run this time keep their last result, with its date); ``fedbw docs``
renders it. Without the variable nothing is written, so an ordinary test run leaves the repo as it was.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ENV = "FEDBW_RELIABILITY_OUT"
SCHEMA = "fedbw.reliability"
#: The command that regenerates the file (written into it, shown under the table).
COMMAND = f"{ENV}=benchmarks/results/reliability.json .venv/bin/python -m pytest -q tests/hardening"
AREAS = ("load", "faults", "hostile input", "security")


@dataclass
class Case:
    """One hardening test: what it tried, what was kept, what it measured, how it ended."""

    id: str
    area: str = ""
    tried: str = ""
    kept: str = ""
    measured: dict[str, Any] = field(default_factory=dict)
    outcome: str = "not run"
    duration_s: float = 0.0
    run_utc: str = ""

    def measure(self, **values: Any) -> None:
        """Figures to show beside the case (name them with their unit: ``rss_growth_mib=3.2``)."""
        self.measured.update(values)


class Registry:
    def __init__(self) -> None:
        self.cases: dict[str, Case] = {}

    def case(self, node_id: str) -> Case:
        return self.cases.setdefault(node_id, Case(node_id))

    def finish(self, path: str | os.PathLike[str]) -> Path:
        """Merge this session's cases (those that say what they tried) into the JSON at ``path``."""
        out = Path(path)
        old: dict[str, Any] = {}
        if out.is_file():
            try:
                old = json.loads(out.read_text(encoding="utf-8"))
            except ValueError:
                old = {}
        merged = {c["id"]: c for c in old.get("cases", []) if isinstance(c, dict) and "id" in c and _exists(c["id"])}
        for case in self.cases.values():
            if case.tried:
                merged[case.id] = asdict(case)
        data = {
            "schema": SCHEMA, "version": 1, "command": COMMAND,
            "updated_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": machine(),
            "cases": sorted(merged.values(), key=lambda c: (_area_order(c.get("area", "")), c["id"])),
        }
        from fedbw.files.atomic import write_json_atomic

        out.parent.mkdir(parents=True, exist_ok=True)
        return write_json_atomic(out, data, indent=1)


def _exists(node_id: str) -> bool:
    """Whether the test a kept case names is still there (renamed or removed tests leave the table)."""
    path, _, name = node_id.partition("::")
    file = Path(__file__).resolve().parents[2] / path
    try:
        return f"def {name.split('[', 1)[0]}(" in file.read_text(encoding="utf-8")
    except OSError:
        return False


def _area_order(area: str) -> int:
    return AREAS.index(area) if area in AREAS else len(AREAS)


def machine() -> dict[str, Any]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()}
