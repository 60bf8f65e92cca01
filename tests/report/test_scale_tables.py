"""docs/simulate.md's scale tables render every measured figure from scale.json, and say which command
writes it when it is missing."""

from __future__ import annotations

import json
from pathlib import Path

import fedbw.report.doc_tables  # noqa: F401 - registers the blocks
from fedbw.report.doc_blocks import TABLES
from fedbw.report.scale_tables import estimate_scale_markdown, simulate_scale_markdown


def _run(per_round: int, steady: float, measure: bool = True) -> dict:
    return {"measure": measure, "clients_per_round": per_round, "clients_total": 10_000, "rounds": 3,
            "round_wall_s": [40.0, steady, steady + 1], "steady_round_wall_s": steady,
            "ms_per_client": 1000 * steady / per_round, "total_wall_s": 100.0, "load_average": [3.5, 4.0],
            "cpu_s": {"driver": 61.0, "ray actors": 120.0, "ray system": 9.0},
            "peak_rss_bytes": 3 * 2**30, "peak_rss_by_kind": {"driver": 2**30, "ray actors": 1.5 * 2**30,
                                                              "ray system": 0.5 * 2**30}}


def test_simulate_scale_shows_time_memory_cpu_and_fedbws_share() -> None:
    data = {"sim1000": {"fedbw": _run(1000, 20.0), "bare": _run(1000, 16.0, False), "fedbw_share": 0.2,
                        "date": "2026-12-01 13:00 UTC", "machine": "x86_64, 2 cores"}}
    text = simulate_scale_markdown(data)
    assert "1,000 of 10,000" in text and "20.00 s" in text and "16.00 s" in text and "20.0 ms" in text
    assert "3.00 (1.00 / 2.00)" in text and "61 / 129" in text  # Ray: its actors and its own processes
    assert "20 % of the steady round" in text and "2026-12-01 13:00 UTC" in text


def test_estimate_scale_shows_plan_and_engine_wall_and_cpu() -> None:
    rows = [{"clients_per_round": 100_000, "clients_total": 200_000, "plan_wall_s": 2.0, "plan_cpu_s": 1.5,
             "estimate_wall_s": 30.0, "estimate_cpu_s": 25.0, "round_time_s": 66.0, "load_average": 5.0}]
    text = estimate_scale_markdown({"estimate": {"rows": rows, "date": "d", "machine": "m"}})
    assert "100,000 of 200,000" in text and "2.00 s / 1.50 s" in text and "30.00 s / 25.00 s" in text
    assert "32.00 s" in text and "not met" in text


def test_estimate_scale_repeated_shows_every_runs_total_and_judges_the_median() -> None:
    rows = [{"clients_per_round": 100_000, "clients_total": 200_000, "plan_wall_s": 0.25, "plan_cpu_s": 0.25,
             "estimate_wall_s": 0.6, "estimate_cpu_s": 0.6, "round_time_s": 66.0, "load_average": 0.5,
             "repeats": 3, "total_wall_s_runs": [0.8, 0.85, 1.2], "reference_loop_s": 0.12}]
    text = estimate_scale_markdown({"estimate": {"rows": rows, "date": "d", "machine": "m"}})
    assert "800.00 ms, 850.00 ms, 1.20 s" in text and "the median of 3 runs side by side" in text
    assert "| 120.00 ms |" in text and "reference loop" in text
    assert ": met — 850.00 ms wall" in text


def test_without_data_the_blocks_name_the_command(tmp_path: Path) -> None:
    assert "benchmarks/scale.py" in TABLES["simulate.scale"](tmp_path)
    (tmp_path / "benchmarks/results").mkdir(parents=True)
    (tmp_path / "benchmarks/results/scale.json").write_text(json.dumps({"estimate": {"rows": [], "date": "d",
                                                                                      "machine": "m"}}))
    assert "no data yet" in TABLES["simulate.scale"](tmp_path)  # the 1,000 case is what the block needs
