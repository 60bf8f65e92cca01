"""benchmarks/privacy_page.py regenerates docs/privacy-overhead.md in one command: every step it runs names a
study file or script that exists, writes the JSON the page's blocks read, and a failing step stops the run."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.benchmark_module import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


def test_every_step_runs_something_that_exists_and_feeds_the_page() -> None:
    page = load_benchmark("privacy_page")
    for name, cmd in page.STEPS.items():
        assert any((ROOT / part).is_file() for part in cmd[1:]), f"{name}: {cmd}"
    text = (ROOT / "docs" / "privacy-overhead.md").read_text(encoding="utf-8")
    from fedbw.report.study_figures import DOC_FIGURES

    blocks = set(re.findall(r"<!-- fedbw-table: (privacy\.[\w-]+) -->", text))
    assert {"privacy.answer", "privacy.overhead", "privacy.at-scale", "privacy.dp-cohorts",
            "privacy.secagg-scale"} <= blocks
    results = {f"{name}.json" for name in page.STEPS}
    assert {DOC_FIGURES[f][0] for f in ("privacy-overhead", "privacy-at-scale", "dp-cohorts")} <= results


def test_a_failing_step_stops_the_run(tmp_path: Path, monkeypatch) -> None:
    page = load_benchmark("privacy_page")
    monkeypatch.setattr(page, "STEPS", {"broken": ["false"]})
    monkeypatch.setattr(page.sys, "argv", ["privacy_page.py"])
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(page.subprocess, "run", lambda cmd, **kw: calls.append(cmd) or real_run(cmd, **kw))
    try:
        page.main()
    except SystemExit as exc:
        assert "broken failed" in str(exc.code)
    else:
        raise AssertionError("a failing step must stop the run")
    assert calls == [["false"]]  # fedbw docs did not run after it
