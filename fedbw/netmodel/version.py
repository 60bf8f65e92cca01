"""The network model's version: a hash of the code that makes its numbers, comments and docstrings aside.

Why a hash and not a number someone bumps: a result (a benchmark's JSON, a study, a run's records) must
say which model made it, and a forgotten bump would let a table made by an older model pass as current.
The hash covers every module of :mod:`fedbw.netmodel`, :mod:`fedbw.flower_protocol` (Flower's intervals
the clock uses) and the drivers of the clock (``engines/estimate.py``, ``engines/simulate/clock.py`` and the
measured round it lays out, ``fl/virtual_clock.py``),
read as Python's syntax tree without docstrings, so rewording a docstring or a comment keeps the version
while changing an expression, a constant or a default changes it. The plan's inputs to the model (bytes,
training time, links) are pinned by the golden records (tests/test_golden.py), not by this hash.
``fedbw docs --check`` compares the version a doc's data recorded with this one.
"""

from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path

#: How a model version is written: this prefix and the first hex digits of the hash.
PREFIX = "m-"
DIGITS = 12


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def source_version(paths: list[Path]) -> str:
    """The version of the code in ``paths``: sha256 over each file's name and its syntax tree without
    docstrings (comments are not in the tree), in name order."""
    h = hashlib.sha256()
    for path in sorted(paths, key=lambda p: p.name):
        tree = _without_docstrings(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        h.update(path.name.encode() + b"\0" + ast.dump(tree, include_attributes=False).encode() + b"\0")
    return PREFIX + h.hexdigest()[:DIGITS]


def model_files() -> list[Path]:
    """The model's modules: every file of this package, Flower's protocol facts and the clock's drivers."""
    here = Path(__file__).resolve().parent
    pkg = here.parent
    return sorted(here.glob("*.py")) + [pkg / "flower_protocol.py", pkg / "engines" / "estimate.py",
                                        pkg / "engines" / "simulate" / "clock.py", pkg / "fl" / "virtual_clock.py"]


@lru_cache(maxsize=1)
def model_version() -> str:
    """This installation's model version (e.g. ``m-3f2a9c41b0d2``)."""
    return source_version(model_files())
