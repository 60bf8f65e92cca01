"""Every generated table in docs/ matches the data it is generated from (benchmark JSON, the catalog)."""

from pathlib import Path

from fedbw.report.doc_blocks import BLOCK
from fedbw.report.docs import regenerate, render_text

ROOT = Path(__file__).resolve().parents[1]


def test_docs_match_their_data():
    stale = regenerate(ROOT, check=True)
    assert not stale, f"run `fedbw docs` (docs differ from their data): {stale}"


def test_no_doc_shows_a_stale_note_in_place_of_its_table():
    """A block whose data came from an older model renders as a note, which `fedbw docs --check` accepts as
    current: the numbers are gone from the page until the benchmark runs again. That must not ship."""
    stale = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
                   if "(stale: these numbers came from model" in p.read_text(encoding="utf-8"))
    assert not stale, f"run the benchmark each note names, then `fedbw docs`: {stale}"


def test_a_hand_edited_table_is_caught_and_unknown_tables_refused():
    text = "x\n<!-- fedbw-table: catalog.flower-costs -->\n| typed by hand |\n<!-- /fedbw-table -->\n"
    new = render_text(text, ROOT)
    assert new != text and "| typed by hand |" not in new and BLOCK.search(new)
    import pytest

    from fedbw.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown generated table"):
        render_text("<!-- fedbw-table: nope -->\n<!-- /fedbw-table -->", ROOT)


def _result(tmp: Path, name: str, data: dict) -> Path:
    import json

    path = tmp / "benchmarks" / "results" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return tmp


def test_every_registered_table_renders_without_data_and_says_how_to_make_it(tmp_path: Path) -> None:
    from fedbw.report.doc_blocks import TABLES

    for name, render in TABLES.items():
        text = render(tmp_path)  # an empty repository: no results yet
        assert text.endswith("\n"), name
        if name.startswith(("fidelity.", "shaper.")):
            assert "no data yet" in text and "benchmarks/" in text, name


def test_the_emulation_table_shows_each_row_from_its_data(tmp_path: Path) -> None:
    from fedbw.report.doc_blocks import TABLES

    row = {"clients": 4, "dilation": 4.0, "cpu_capped": True, "transfers_ge_1s": 16, "transfers_within_2pct": 15,
           "transfer_median_abs_error": 0.004, "transfer_max_abs_error": 0.031, "simulate_round_s": 30.0,
           "emulate_round_s": 30.9, "round_error": 0.03, "host_share": 0.02, "host_bound_rounds": 0,
           "emulate_rounds_s": [31.0, 30.9, 30.9], "cpu_busy": 0.7}
    root = _result(tmp_path, "agreement-emulation.json",
                   {"rows": [row], "date": "2026-12-01", "machine": "test box", "rounds": 3,
                    "config": {"model": {"name": "resnet18"}, "network": {"profile": "home-30"},
                               "clients": {"device_profile": "desktop-gpu"}}})
    text = TABLES["fidelity.emulation"](root)
    assert "| 4 | 4× capped | 16 | 15 | +0.4 % / +3.1 % | - | - | - | 30.00 s | 30.90 s | +3.0 % | 2 % | 0 of 3 | 70 % |" in text
    assert "test box" in text and "resnet18 on home-30" in text


def test_the_shaper_targets_follow_the_data(tmp_path: Path) -> None:
    from fedbw.report.doc_blocks import TABLES

    def row(rate: int, n: int, cpu: float, win: tuple[float, float]) -> dict:
        return {"mode": "proxy", "rate": rate, "clients": n, "goodput_pct_median": 100.0, "goodput_pct_min": 99.9,
                "goodput_pct_max": 100.1, "window_pct_min": win[0], "window_pct_max": win[1],
                "latency_err_ms_p50": 0.2, "latency_err_ms_p99": 2.0, "direct_one_way_ms_p99": 0.5, "cpu_pct_core": cpu}

    root = _result(tmp_path, "shaper.json", {"rows": [row(80, 1, 4.0, (99, 101)), row(30, 32, 31.0, (93, 107))],
                                             "machine": {"cpu": "x", "cores": 2}, "started": "now"})
    text = TABLES["shaper.targets"](root)
    assert "| CPU ≤ 6 % of a core per 80 Mbps link | 4.0 % (1 × 80, incl. the probe link) | met |" in text
    assert "| CPU ≤ 25 % for 32 × 30 Mbps | 31.0 % | **missed** |" in text
    assert "1 of 2 rows" in text and "| 80 | 1 | 100.00 |" in TABLES["shaper.accuracy"](root)


def test_the_deployment_table_says_which_runs_were_reused_and_when(tmp_path: Path) -> None:
    from fedbw.report.doc_blocks import TABLES

    engines = {e: {"round_s": [10.0, 10.0], "comm_s": [1.0, 1.0], "compute_s": [0.5, 0.5], "framework_s": [8.5, 8.5],
                   "steady_round_s": s, "vs_emulate": s / 10.0 - 1} for e, s in
               (("estimate", 9.5), ("simulate", 10.5), ("emulate", 10.0))}
    data = {"cases": [{"case": "c", "clients": 1, "engines": engines}], "date": "2026-12-01 19:03 UTC",
            "machine": "test box", "calibration": {"created_utc": "T", "machine": "M"}}
    fresh = TABLES["fidelity.deployment"](_result(tmp_path / "a", "agreement-deployment.json", data))
    assert "| c | 1 | 9.50 s | 10.50 s | 10.00 s | -5.0 % | +5.0 % |" in fresh and "Reused" not in fresh
    assert "met — 2 of 2 pairs within; the largest difference -5.0 % (c, 1 client(s), estimate)" in fresh
    reused = [{"name": "c-1", "engine": "emulate", "run_dir": f"c-1-emulate-20261201-{t}"}
              for t in ("181204", "183140")]
    text = TABLES["fidelity.deployment"](_result(tmp_path / "b", "agreement-deployment.json",
                                                 {**data, "reused": reused}))
    assert "2 emulate run(s) started 18:12–18:31 UTC" in text and "read no calibration" in text
    reused.append({"name": "app-sim-2", "engine": "simulate --app", "run_dir": "app-sim-2",
                   "started_utc": "2026-12-01T19:07:36Z"})
    text = TABLES["fidelity.deployment"](_result(tmp_path / "c", "agreement-deployment.json",
                                                 {**data, "reused": reused}))
    assert "1 simulate --app run(s) started 19:07 UTC" in text and "read no calibration" not in text
    assert "host's reference" not in text and "rescaled" not in text  # rows without a host-speed factor
    timed = {**data, "cases": [{**data["cases"][0], "host_speed": 0.91},
                               {**data["cases"][0], "clients": 2, "host_speed": 1.07}]}
    text = TABLES["fidelity.deployment"](_result(tmp_path / "d", "agreement-deployment.json", timed))
    assert "took ×0.91–1.07 the calibration's; the model used the calibration as it is" in text
    text = TABLES["fidelity.deployment"](_result(tmp_path / "e", "agreement-deployment.json",
                                                 {**timed, "rescaled_to_host_speed": True}))
    assert "rescaled to this host's speed around each emulate run (×0.91–1.07" in text
    # several emulate runs of a case: their mean, how many, and their range; parts from the recorded means
    emu = {**engines["emulate"], "trials_s": [9.0, 11.0], "steady_comm_s": 2.0}
    text = TABLES["fidelity.deployment"](_result(tmp_path / "f", "agreement-deployment.json",
                                                 {**data, "cases": [{**data["cases"][0],
                                                                     "engines": {**engines, "emulate": emu}}]}))
    assert "| 10.00 s (2 runs: 9.00 s–11.00 s) |" in text and "| 2.00 s / 500.00 ms / 8.50 s |" in text
    # the calibration the model used: the catalog's, or a file measured for the run, named
    assert "Flower costs from the catalog's calibration (T, M)." in fresh
    own = {**data, "calibration": {"created_utc": "T2", "machine": "M2", "file": "benchmarks/results/cal.toml"}}
    text = TABLES["fidelity.deployment"](_result(tmp_path / "g", "agreement-deployment.json", own))
    assert "Flower costs from the calibration `benchmarks/results/cal.toml` (T2, M2)." in text


def test_the_privacy_table_judges_each_variant_against_15_percent(tmp_path: Path) -> None:
    from fedbw.report.doc_blocks import TABLES

    def row(variant: str, study: float, emu: float) -> dict:
        return {"variant": variant, "profile": "home-30", "simulate_round_s": study, "emulate_round_s": emu,
                "error": emu / study - 1, "simulate_framework_s": 1.0, "emulate_framework_s": 1.0, "dilation": 6.0,
                "host_share": 0.01, "host_bound_rounds": 0, "emulate_rounds": 2}

    data = {"rows": [row("plain", 10.0, 12.5), row("secagg", 40.0, 41.0)], "rounds": 2, "study": "s.toml",
            "date": "d", "machine": "m"}
    text = TABLES["fidelity.privacy"](_result(tmp_path, "agreement-privacy.json", data))
    assert "not met — 1 of 2 variants within; the largest difference +25.0 % (plain)" in text
    assert "by part" not in text  # rows from before the parts were recorded: no breakdown

    from fedbw.flower_protocol import FRAMEWORK_PARTS

    parts = dict.fromkeys(FRAMEWORK_PARTS, 1.0)
    with_parts = {**data, "rows": [{**r, "simulate_parts_s": parts, "emulate_parts_s": {**parts, "clientapp_start_s": 2.3}}
                                   for r in data["rows"]]}
    text = TABLES["fidelity.privacy"](_result(tmp_path / "p", "agreement-privacy.json", with_parts))
    assert "by part" in text and "| plain | 1.00 s / 1.00 s (+0.00 s) | 1.00 s / 2.30 s (+1.30 s) |" in text
    assert "Reused" not in text
    reused = [{"name": "privacy-plain", "engine": "emulate", "run_dir": "privacy-plain-emulate-20261201-192922",
               "started_utc": None}]  # no environment.json: the time in the directory's name
    text = TABLES["fidelity.privacy"](_result(tmp_path / "r", "agreement-privacy.json", {**data, "reused": reused}))
    assert "not run again: 1 emulate run(s) started 19:29 UTC" in text
