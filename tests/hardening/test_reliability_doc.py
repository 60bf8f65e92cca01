"""docs/reliability.md's tables come from the JSON the tests and benchmarks write, verdicts included."""

from __future__ import annotations

import json
from pathlib import Path

import fedbw.report.doc_tables  # noqa: F401 - registers the renderers
from fedbw.report.doc_blocks import TABLES
from fedbw.report.format import fmt_s
from tests.hardening.reliability import Case, Registry
from tests.test_docs import _result as _root  # a results directory holding one JSON file


def test_the_registry_merges_runs_and_keeps_cases_not_run_this_time(tmp_path: Path) -> None:
    out = tmp_path / "reliability.json"
    a = "tests/hardening/test_faults.py::test_superlink_killed_mid_run"
    b = "tests/hardening/test_soak.py::test_small_soak_leaks_nothing"
    gone = "tests/hardening/test_faults.py::test_that_was_renamed"
    first = Registry()
    first.cases[a] = Case(a, area="faults", tried="A", kept="x", outcome="passed")
    first.cases[b] = Case(b, area="load", tried="B", kept="y", outcome="failed")
    first.cases[gone] = Case(gone, area="faults", tried="C", kept="z", outcome="passed")
    first.cases["t::quiet"] = Case("t::quiet")  # says nothing it tried: not a row
    first.finish(out)
    assert {c["id"] for c in json.loads(out.read_text())["cases"]} == {a, b, gone}
    second = Registry()
    second.cases[b] = Case(b, area="load", tried="B", kept="y", outcome="passed")
    second.finish(out)
    cases = json.loads(out.read_text())["cases"]
    # load first; a kept from the first run; the renamed test's row gone once its test no longer exists
    assert [(c["id"], c["outcome"]) for c in cases] == [(b, "passed"), (a, "passed")]


def test_cases_table_shows_each_case(tmp_path: Path) -> None:
    root = _root(tmp_path, "reliability.json", {"cases": [
        {"id": "tests/hardening/test_x.py::test_kill", "area": "faults", "tried": "SIGKILL the shaper",
         "kept": "records", "measured": {"rounds_kept": 1}, "outcome": "passed", "duration_s": 80.2,
         "run_utc": "2026-12-01T12:00:00+00:00"}], "machine": {"cpu": "box", "cores": 2}})
    text = TABLES["reliability.cases"](root)
    assert "| faults | SIGKILL the shaper | records | rounds kept 1 | passed (2026-12-01, 80 s) | `test_kill` |" in text


def _cpu_row(tree: str, cpu: float, goodput: float) -> dict:
    return {"shaper_tree": tree, "rate": 30, "clients": 32, "trials": 3, "cpu_pct_core_median": cpu,
            "cpu_pct_core_all": [cpu] * 3, "cpu_pct_core_per_full_rate_median": cpu * 100 / goodput,
            "goodput_pct_median": goodput, "window_pct_min": 99.0, "window_pct_max": 101.0, "loadavg_1m_median": 3.0}


def test_shaper_cpu_verdicts_need_fully_driven_links(tmp_path: Path) -> None:
    def verdict(cpu: float, goodput: float) -> str:
        root = _root(tmp_path, "shaper-cpu.json", {"medians": [_cpu_row("current", cpu, goodput),
                                                               _cpu_row("baseline", 40.0, 100.0)]})
        line = next(x for x in TABLES["reliability.shaper-cpu"](root).splitlines() if x.startswith("| current"))
        return line
    assert "| met |" in verdict(21.0, 100.0)
    assert "| **missed** |" in verdict(27.0, 100.0)
    assert "not judged (goodput 60 %)" in verdict(15.0, 60.0)  # low CPU because few bytes moved


def test_shaper_cpu_table_shows_the_kernel_share_and_syscalls(tmp_path: Path) -> None:
    split = {**_cpu_row("current", 40.0, 100.0), "cpu_user_pct_core_median": 10.0, "cpu_sys_pct_core_median": 30.0,
             "events_per_s_median": {"syscalls": 12345.6}}
    root = _root(tmp_path, "shaper-cpu.json", {"medians": [split, _cpu_row("baseline", 40.0, 100.0)]})
    lines = TABLES["reliability.shaper-cpu"](root).splitlines()
    assert "| 75 % | 12,346 | 3.0 |" in next(x for x in lines if x.startswith("| current"))
    assert "| - | - | 3.0 |" in next(x for x in lines if x.startswith("| baseline"))  # older files: no split


def test_soak_table_shows_rounds_and_what_was_left(tmp_path: Path) -> None:
    count = {"processes": 7, "fds": 120, "threads": 60, "rss_bytes": 900 * 2**20, "short_lived": 1,
             "rss_long_lived_bytes": 700 * 2**20, "own_fds": 20, "own_threads": 3, "own_rss_bytes": 1}
    after = {**count, "processes": 0, "fds": 0, "threads": 0, "rss_bytes": 0, "rss_long_lived_bytes": 0}
    root = _root(tmp_path, "soak.json", {
        "clients": 3, "rounds": 2, "dilation": 1.0, "wall_s": 100.0, "machine": {"cores": 2, "loadavg_start": [1.0]},
        "per_round": [{"round": 1, "t_s": 50.0, **count}, {"round": 2, "t_s": 99.0, **count}],
        "before": {**after, "own_fds": 20, "own_threads": 3}, "after": after,
        "verdicts": {"rss_growth_round2_to_last": 0.0, "rss_growth_bound": 0.25, "ok": True}})
    text = TABLES["reliability.soak"](root)
    assert f"| 2 | {fmt_s(99.0)} | 7 | 120 | 60 | 900 | 700 | 20 | 3 |" in text
    assert "| after | - | 0 | 0 | 0 | 0 | 0 | 20 (start 20) | 3 (start 3) |" in text
    assert "verdict: no leak" in text
