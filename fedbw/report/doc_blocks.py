"""Generated tables' building blocks: the block marker, the registry of renderers and their helpers.

:mod:`fedbw.report.doc_tables` registers each renderer here; :mod:`fedbw.report.docs` rewrites the docs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BLOCK = re.compile(r"(<!-- fedbw-table: (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /fedbw-table -->)", re.S)
RESULTS = Path("benchmarks") / "results"

Renderer = Callable[[Path], str]
TABLES: dict[str, Renderer] = {}


def table(name: str) -> Callable[[Renderer], Renderer]:
    """Register a renderer for the block named ``name``."""
    def register(fn: Renderer) -> Renderer:
        TABLES[name] = fn
        return fn
    return register


def load_result(root: Path, name: str) -> dict[str, Any] | None:
    path = root / RESULTS / name
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def md_table(header: list[str], rows: list[list[str]], right: set[int] | None = None) -> str:
    """A Markdown table; columns in ``right`` (default: all but the first) are right-aligned."""
    right = set(range(1, len(header))) if right is None else right
    align = ["---:" if i in right else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def missing(result: str, command: str) -> str:
    return f"(no data yet: `{command}` writes {RESULTS / result})\n"


def made_by(data: dict[str, Any], part: str | None = None) -> dict[str, Any] | None:
    """The ``made_by`` stamp of a result (its ``part``'s own when the part has one, as scale.json's cases
    do, each run at its own time), None where the result predates the stamp."""
    inner = data.get(part) if part else None
    if isinstance(inner, dict) and isinstance(inner.get("made_by"), dict):
        return inner["made_by"]
    stamp = data.get("made_by")
    return stamp if isinstance(stamp, dict) else None


def stale_version(stamp: dict[str, Any] | None) -> str | None:
    """The model version a result's stamp names when it is not this fedbw's; None when current or unknown."""
    from fedbw.netmodel.version import model_version

    made = (stamp or {}).get("model_version")
    return None if made is None or made == model_version() else str(made)


def stale_note(stamp: dict[str, Any] | None, command: str) -> str | None:
    """A note replacing numbers made by another model version than this fedbw's; None when they are
    current or their model is unknown."""
    from fedbw.netmodel.version import model_version

    made = stale_version(stamp)
    if made is None:
        return None
    return (f"(stale: these numbers came from model {made}; this fedbw's model is {model_version()}. "
            f"`{command}` writes them again.)\n")


def made_by_line(stamp: dict[str, Any] | None, command: str) -> str:
    if stamp is None or stamp.get("model_version") is None:
        return ("\n*Model version not recorded: these numbers predate the model's versioning (2026-12-05); "
                f"`{command}` writes them again under the current model.*\n")
    cal = stamp.get("calibration")
    return f"\n*Model {stamp['model_version']}, calibration {cal or 'none (links only)'}.*\n"


#: Per benchmark result file, the renderer a benchmark prints after its run (the first registered).
BY_RESULT: dict[str, Callable[[dict[str, Any]], str]] = {}


@dataclass(frozen=True)
class ModelBlock:
    """A block whose numbers the model made: where they come from and what writes them again."""

    result: str  #: its file in benchmarks/results/
    command: str
    needs: str | None  #: the part of the result it reads (a part may carry its own stamp)


#: Every block registered with ``model=True``, by name.
MODEL_BLOCKS: dict[str, ModelBlock] = {}


def stale_blocks(root: Path) -> list[tuple[str, ModelBlock, str]]:
    """The model's blocks whose data another model version made: (block, where, that version), in the order
    registered. What a model change leaves to run again before ``fedbw docs --check`` passes."""
    out = []
    for name, block in MODEL_BLOCKS.items():
        data = load_result(root, block.result)
        if data and (made := stale_version(made_by(data, block.needs))) is not None:
            out.append((name, block, made))
    return out


def result_table(name: str, result: str, command: str, needs: str | None = None, model: bool = False,
                 ) -> Callable[[Callable[[dict[str, Any]], str]], Callable[[dict[str, Any]], str]]:
    """Register ``fn(data)`` as the block ``name``, rendered from ``benchmarks/results/<result>``; with
    no such file (or without its ``needs`` key) the block says which command writes it.

    ``model``: the block's numbers come from the network model, so the block says which model and
    calibration made them (:func:`made_by_line`), and data made by another model version than this
    fedbw's render as a note that they are stale instead of the table: ``fedbw docs --check`` then fails
    until the benchmark runs again under the current model (or ``fedbw docs`` drops the old numbers)."""
    def register(fn: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
        def render(root: Path) -> str:
            data = load_result(root, result)
            if not data or (needs is not None and not data.get(needs)):
                return missing(result, command)
            if not model:
                return fn(data)
            stamp = made_by(data, needs)
            stale = stale_note(stamp, command)
            return stale if stale else fn(data) + made_by_line(stamp, command)
        TABLES[name] = render
        BY_RESULT.setdefault(result, fn)
        if model:
            MODEL_BLOCKS[name] = ModelBlock(result, command, needs)
        return fn
    return register
