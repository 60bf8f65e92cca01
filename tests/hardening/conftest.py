"""Fixtures of the hardening tests: the reliability registry (what each test tried and kept)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator

import pytest

from tests.hardening.reliability import ENV, Case, Registry

REGISTRY = Registry()
#: The area of a test that failed before it named its own.
AREA_OF_MODULE = {"test_faults": "faults", "test_security": "security", "test_secagg_privacy": "security",
                  "test_soak": "load", "test_hostile_input": "hostile input", "test_hostile_traffic": "hostile input"}


@pytest.fixture
def reliability(request: pytest.FixtureRequest) -> Iterator[Case]:
    """The test's entry in docs/reliability.md: set ``area``, ``tried``, ``kept``; ``measure(...)`` figures."""
    case = REGISTRY.case(request.node.nodeid)
    case.measured = {}
    case.run_utc = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    yield case


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    case = REGISTRY.cases.get(item.nodeid)
    if case is not None and (report.when == "call" or (report.when == "setup" and report.outcome != "passed")):
        case.outcome = report.outcome
        if hasattr(report, "wasxfail"):  # a known shortfall, measured: shown as such, never as passed
            case.outcome = "known failure" if report.outcome == "skipped" else "passed (marked known failure)"
        case.duration_s = round(report.duration, 2)
        if not case.tried:  # failed before it said what it tried: still a row, never silently dropped
            doc = (getattr(item, "function", None).__doc__ or "").strip().splitlines() if hasattr(item, "function") \
                else []
            case.area = case.area or AREA_OF_MODULE.get(item.path.stem, "")
            case.tried = doc[0] if doc else item.name.removeprefix("test_").replace("_", " ")
            case.kept = f"not shown: the test {report.outcome} before it got there"
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get(ENV)
    if path:
        REGISTRY.finish(path)
