"""The emulate engine is the reference the model is checked against, so nothing it measures or decides
may come from the model: no module of fedbw.engines.emulate imports the network model or the
calibration, and none reads a plan's costs (the Flower facts both sides need, stage names and
intervals, live in fedbw.flower_protocol)."""

from __future__ import annotations

import ast

from tests.test_imports import imports_of, modules

EMULATE = "fedbw.engines.emulate"
MODEL = ("fedbw.netmodel", "fedbw.calibration", "fedbw.calibrate")


def _in(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def model_imports(package: str) -> list[str]:
    """``package``'s modules that import the model or its calibration (inside functions too). Shared
    vocabulary reached through other layers (a record's field names, a message's sizes) is not the model's
    numbers and is not followed; the plan's costs are caught by :func:`costs_reads`."""
    return [f"{m} → {d}" for m in modules() if _in(m, (package,)) for d in sorted(imports_of(m)[0])
            if _in(d, MODEL)]


def costs_reads(package: str) -> list[str]:
    out = []
    for m, path in modules().items():
        if _in(m, (package,)):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            out += [f"{m}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "costs"]
    return out


def test_emulate_imports_no_model_code() -> None:
    bad = model_imports(EMULATE)
    assert not bad, "emulate reaches the model:\n" + "\n".join(bad)


def test_emulate_reads_no_plan_costs() -> None:
    assert not costs_reads(EMULATE)


def test_the_checks_can_fail() -> None:
    assert model_imports("fedbw.engines.estimate")  # the analytic engine is the model
    assert costs_reads("fedbw.plan")
