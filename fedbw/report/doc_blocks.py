"""Generated tables' building blocks: the block marker, the registry of renderers and their helpers.

:mod:`fedbw.report.doc_tables` registers each renderer here; :mod:`fedbw.report.docs` rewrites the docs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
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


#: Per benchmark result file, the renderer a benchmark prints after its run (the first registered).
BY_RESULT: dict[str, Callable[[dict[str, Any]], str]] = {}


def result_table(name: str, result: str, command: str, needs: str | None = None,
                 ) -> Callable[[Callable[[dict[str, Any]], str]], Callable[[dict[str, Any]], str]]:
    """Register ``fn(data)`` as the block ``name``, rendered from ``benchmarks/results/<result>``; with
    no such file (or without its ``needs`` key) the block says which command writes it."""
    def register(fn: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
        def render(root: Path) -> str:
            data = load_result(root, result)
            if not data or (needs is not None and not data.get(needs)):
                return missing(result, command)
            return fn(data)
        TABLES[name] = render
        BY_RESULT.setdefault(result, fn)
        return fn
    return register
