"""Golden records: the same config and seed give the same records as the pinned files in tests/golden/.

The files were written by the code before the "one home for each thing" refactor (commit 832d6ed) and pin
behaviour across moves of code. Every field of a pinned record must be present with the same value; new
fields may appear. Estimate must match exactly. Simulate measures Flower's real messages, whose metadata
(random 64-bit node ids, message ids) varies by a few bytes from run to run, so its bytes may differ by
``SIM_BYTES_SLACK`` per message and its times by what those bytes cost on the link.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from fedbw.config import config_from_dict
from fedbw.results.records import load_records
from fedbw.runner import run_experiment

GOLDEN_DIR = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN_DIR))
from configs import GOLDEN, VOLATILE  # noqa: E402

SIM_BYTES_SLACK = 64.0  #: bytes per message (node ids, message ids)
SIM_REL = 2e-3  #: relative slack on times and totals derived from those bytes


def _pinned(name: str) -> list[dict[str, Any]]:
    lines = (GOLDEN_DIR / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [r for r in rows if r.get("kind") != "header"]  # a regenerated file starts with the records header


def _as_json(run_dir: Path) -> list[dict[str, Any]]:
    clients, rounds = load_records(run_dir)
    out: list[dict[str, Any]] = []
    for r in rounds:
        out += [c.to_json() for c in clients if c.round == r.round]
        out.append(r.to_json())
    return out


def _compare(pinned: Any, got: Any, path: str, exact: bool, problems: list[str]) -> None:
    if isinstance(pinned, dict):
        if not isinstance(got, dict):
            problems.append(f"{path}: expected an object, got {got!r}")
            return
        for key, value in pinned.items():
            if key in VOLATILE:
                continue
            if key not in got:
                problems.append(f"{path}.{key}: missing")
                continue
            _compare(value, got[key], f"{path}.{key}", exact, problems)
    elif isinstance(pinned, list):
        if not isinstance(got, list) or len(got) != len(pinned):
            problems.append(f"{path}: expected {len(pinned)} items, got {got!r}")
            return
        for i, (a, b) in enumerate(zip(pinned, got)):
            _compare(a, b, f"{path}[{i}]", exact, problems)
    elif isinstance(pinned, float) and not isinstance(pinned, bool):
        if not isinstance(got, (int, float)):
            problems.append(f"{path}: expected {pinned}, got {got!r}")
        elif exact:
            if not math.isclose(pinned, got, rel_tol=1e-12, abs_tol=1e-15):
                problems.append(f"{path}: expected {pinned!r}, got {got!r}")
        else:
            slack = SIM_BYTES_SLACK * 8 if "bytes" in path.rsplit(".", 1)[-1] else 0.0
            if not math.isclose(pinned, got, rel_tol=SIM_REL, abs_tol=max(slack, 1e-5)):
                problems.append(f"{path}: expected {pinned!r}, got {got!r}")
    elif pinned != got:
        problems.append(f"{path}: expected {pinned!r}, got {got!r}")


def _check(name: str, tmp_path: Path) -> None:
    cfg = config_from_dict({**GOLDEN[name], "name": name, "output_dir": str(tmp_path)})
    result = run_experiment(cfg)
    pinned, got = _pinned(name), _as_json(result.run_dir)
    problems: list[str] = []
    _compare(pinned, got, name, exact=cfg.engine == "estimate", problems=problems)
    assert not problems, "records differ from tests/golden:\n" + "\n".join(problems[:30])


@pytest.mark.parametrize("name", [n for n in GOLDEN if n.startswith("estimate-")])
def test_estimate_records_match_golden(name: str, tmp_path: Path) -> None:
    _check(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in GOLDEN if n.startswith("simulate-")])
def test_simulate_records_match_golden(name: str, tmp_path: Path) -> None:
    _check(name, tmp_path)


def test_comparison_catches_a_changed_value() -> None:
    """The comparison itself can fail: a moved byte count or a missing field is reported."""
    pinned = _pinned("estimate-plain")
    changed = json.loads(json.dumps(pinned))
    changed[0]["bytes_up"] += 1.0
    del changed[-1]["round_time_s"]
    problems: list[str] = []
    _compare(pinned, changed, "x", exact=True, problems=problems)
    assert any("bytes_up" in p for p in problems) and any("round_time_s: missing" in p for p in problems)
