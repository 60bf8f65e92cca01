"""The layout's dependency rules, read from the source: every ``import`` in every fedbw module, those
inside functions and under ``if TYPE_CHECKING:`` included (a lazy import is still a dependency).

* the pure packages (:data:`PURE`: ``fedbw.netmodel``, ``fedbw.shaper``, ``fedbw.privacy``, ``fedbw.netns``,
  ``fedbw.traces``) import neither Flower nor torch — not directly and not through any fedbw module
  they import;
* ``fedbw.fl`` never imports ``fedbw.engines``;
* there is no import cycle between fedbw modules;
* packages sit in docs/architecture.md's layers (:data:`LAYERS`) and import only downward, so no two
  packages form a cycle either (the upward imports still to remove are listed, with their issue).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "fedbw"
PURE = ("fedbw.netmodel", "fedbw.shaper", "fedbw.privacy", "fedbw.netns", "fedbw.traces")
HEAVY = ("flwr", "torch")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=1)
def modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The fedbw module an imported name lives in (``fedbw.plan.Plan`` → ``fedbw.plan``)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


@lru_cache(maxsize=None)
def imports_of(module: str) -> tuple[frozenset[str], frozenset[str]]:
    """(fedbw modules, top-level external packages) that ``module`` imports anywhere in its source."""
    known = modules()
    path = known[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    internal: set[str] = set()
    external: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        for name in names:
            if name.split(".")[0] == "fedbw":
                if (target := _resolve(name, known)) is not None and target != module:
                    internal.add(target)
            elif name:
                external.add(name.split(".")[0])
    return frozenset(internal), frozenset(external)


def reachable(module: str) -> set[str]:
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += imports_of(m)[0]
    return seen


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("package", PURE)
def test_pure_packages_import_neither_flower_nor_torch(package: str) -> None:
    offenders = []
    for module in (m for m in modules() if _in(m, package)):
        for dep in sorted(reachable(module)):
            heavy = imports_of(dep)[1] & set(HEAVY)
            if heavy:
                offenders.append(f"{module} → … → {dep} imports {', '.join(sorted(heavy))}")
    assert not offenders, "\n".join(offenders)


def test_fl_never_imports_engines() -> None:
    bad = [f"{m} imports {d}" for m in modules() if _in(m, "fedbw.fl")
           for d in imports_of(m)[0] if _in(d, "fedbw.engines")]
    assert not bad, "\n".join(bad)


def find_cycle(graph: dict[str, frozenset[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (module → modules it imports), or None."""
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state and (found := visit(d)) is not None:
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)) is not None:
            return found
    return None


def test_no_import_cycles() -> None:
    graph = {m: imports_of(m)[0] for m in modules()}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_the_checks_can_fail() -> None:
    """The cycle finder and the import reader see what they must (a rule that cannot fail proves nothing)."""
    assert find_cycle({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"})}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": frozenset({"b"}), "b": frozenset()}) is None
    internal, external = imports_of("fedbw.fl.client_app")
    assert "flwr" in external and "fedbw.fl.settings" in internal
    assert "torch" in imports_of("fedbw.device")[1]  # an import inside a function counts


def test_no_module_is_much_longer_than_400_lines() -> None:
    long = {m: n for m, p in modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 420}
    assert not long, f"split these modules by job: {long}"


#: docs/architecture.md's layers, bottom first: a package imports only from its own layer or the ones
#: below it, and the packages form no cycle. Top-level modules are their own "package" (fedbw.plan).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("fedbw", "fedbw.errors", "fedbw.files", "fedbw.tomlvalue", "fedbw.flower_protocol"),
    ("fedbw.catalog", "fedbw.device", "fedbw.processes", "fedbw.shaper", "fedbw.netns", "fedbw.timewarp",
     "fedbw.netmodel", "fedbw.flower_limits", "fedbw.traces", "fedbw.models", "fedbw.privacy"),
    ("fedbw.config", "fedbw.calibration"),
    ("fedbw.links", "fedbw.results"),
    ("fedbw.plan",),
    ("fedbw.fl",),
    ("fedbw.engines", "fedbw.collectives"),
    ("fedbw.report",),
    ("fedbw.runner",),
    ("fedbw.compare", "fedbw.sweeps", "fedbw.studies", "fedbw.calibrate", "fedbw.api"),
    ("fedbw.cli",),
)
#: Upward imports still to remove, each with the issue item that removes it. The test fails on any
#: upward import not listed here and on a listed one that is gone (so this list only shrinks).
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def package_of(module: str) -> str:
    """``fedbw.engines.emulate.run`` → ``fedbw.engines``; a top-level module is its own package."""
    return ".".join(module.split(".")[:2])


def package_graph() -> dict[str, dict[str, list[str]]]:
    """package → package it imports → the module imports that make the edge (imports inside functions
    and under TYPE_CHECKING counted, as for modules)."""
    graph: dict[str, dict[str, list[str]]] = {}
    for m in modules():
        for d in imports_of(m)[0]:
            a, b = package_of(m), package_of(d)
            if a != b:
                graph.setdefault(a, {}).setdefault(b, []).append(f"{m} → {d}")
    return graph


def upward_imports(graph: dict[str, dict[str, list[str]]],
                   layers: tuple[tuple[str, ...], ...]) -> dict[tuple[str, str], list[str]]:
    level = {p: i for i, layer in enumerate(layers) for p in layer}
    return {(a, b): why for a, deps in graph.items() for b, why in deps.items()
            if level.get(b, -1) > level.get(a, len(layers))}


def test_every_package_has_a_layer() -> None:
    placed = {p for layer in LAYERS for p in layer}
    missing = sorted({package_of(m) for m in modules()} - placed)
    assert not missing, f"place these in LAYERS (and in docs/architecture.md): {missing}"


def test_packages_import_only_downward() -> None:
    found = upward_imports(package_graph(), LAYERS)
    new = {k: v for k, v in found.items() if k not in KNOWN_UPWARD}
    gone = sorted(set(KNOWN_UPWARD) - set(found))
    assert not new, "upward imports:\n" + "\n".join(f"{a} → {b}: {', '.join(v[:3])}" for (a, b), v in new.items())
    assert not gone, f"no longer imported upward, remove from KNOWN_UPWARD: {gone}"


def test_no_package_cycles_beyond_the_known_upward_imports() -> None:
    graph = {a: frozenset(b for b in deps if (a, b) not in KNOWN_UPWARD) for a, deps in package_graph().items()}
    cycle = find_cycle(graph)
    assert cycle is None, "package cycle: " + " → ".join(cycle or [])


def test_the_layer_checks_can_fail() -> None:
    graph = {"low": {"high": ["low.x → high.y"]}, "high": {"low": ["high.y → low.z"]}}
    assert upward_imports(graph, (("low",), ("high",))) == {("low", "high"): ["low.x → high.y"]}
    assert package_of("fedbw.engines.emulate.run") == "fedbw.engines" and package_of("fedbw.plan") == "fedbw.plan"
    assert "fedbw.runner" in package_graph()["fedbw.calibrate"]  # an import inside a function is an edge
