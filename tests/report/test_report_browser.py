"""report.html opened in a real headless Chromium: it renders, every image loads, the console stays quiet,
nothing is fetched; a screenshot is kept (under the test's tmp dir, and in $FEDBW_ARTIFACTS when set).

The report comes from a real small sweep (estimate engine: seconds) plus two emulate runs written by hand
(accuracy curves, host shares, a link series: the figures only those runs have), so every kind of figure
the page can hold is drawn in the browser at least once.
"""

import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fedbw.cli import app

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "experiments" / "quickstart.toml")
runner = CliRunner()


def _keep(png: bytes, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / name
    shot.write_bytes(png)
    artifacts = os.environ.get("FEDBW_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / name)
    return shot


@pytest.mark.slow
def test_a_sweep_report_renders_in_headless_chromium(tmp_path, make_run, browser_module, chromium_exe):
    b = browser_module
    res = runner.invoke(app, ["sweep", QUICKSTART, "--grid", "network.profile=home-30,home-80", "--grid",
                              "privacy.secagg.enabled=false,true", "--engine", "estimate", "--set",
                              f'output_dir="{tmp_path / "runs"}"', "--set", "training.rounds=2", "--quiet"])
    assert res.exit_code == 0, res.output
    sweep_dir = Path(res.output.strip())
    emu = [make_run(tmp_path / "emu-30", engine="emulate", profile="home-30", up_s=2.0,
                    host_shares=(0.01, 0.08, 0.02), series=True),
           make_run(tmp_path / "emu-80", engine="emulate", profile="home-80", up_s=0.5, host_shares=(0.0, 0.0, 0.0))]
    out = tmp_path / "report"
    res = runner.invoke(app, ["report", str(sweep_dir), *map(str, emu), "--out", str(out), "--target-accuracy",
                              "0.8"])
    assert res.exit_code == 0, res.output
    page = out / "report.html"
    n_img = len(re.findall(r"<img ", page.read_text(encoding="utf-8")))
    assert n_img >= 8

    with b.Chromium(chromium_exe, tmp_path / "profile", tmp_path / "chromium.log") as browser:
        seen = b.check_page(browser, page.as_uri())
        # the checks below can fail: a page with a missing image and a console error is caught
        bad = tmp_path / "bad.html"
        bad.write_text('<!DOCTYPE html><html><head><title>bad</title></head><body><img src="missing.png">'
                       '<script>console.error("boom")</script></body></html>')
        control = b.check_page(browser, bad.as_uri())
    shot = _keep(seen.screenshot_png, tmp_path, "report-screenshot.png")

    assert seen.title.startswith("fedbw report")
    assert "Runs side by side" in seen.text and "In short" in seen.text and "home-80" in seen.text
    assert len(seen.images) == n_img
    broken = [i["alt"] for i in seen.images if not (i["complete"] and i["naturalWidth"] > 0)]
    assert broken == [], f"images that did not load: {broken}"
    assert {i["scheme"] for i in seen.images} == {"data"}
    assert seen.console_errors == [], seen.console_errors
    assert {r.split(":")[0] for r in seen.requests} <= {"file", "data"}  # nothing left the page
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000

    assert control.images[0]["naturalWidth"] == 0
    assert any("boom" in e for e in control.console_errors)
