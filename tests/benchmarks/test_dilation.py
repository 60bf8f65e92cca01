"""benchmarks/dilation.py's bookkeeping: the trial order, the pooled summary and its table (no emulation)."""

from __future__ import annotations

import pytest

from tests.benchmark_module import load_benchmark

from fedbw.flower_protocol import FRAMEWORK_PARTS
from fedbw.report.validation_table import dilation_markdown

D = load_benchmark("dilation")


def test_trials_alternate_so_a_drift_of_the_host_falls_on_both_dilations() -> None:
    assert D.order(2) == ["auto", "double", "double", "auto"]
    assert D.order(1) == ["auto", "double"]
    assert D.order(3).count("auto") == D.order(3).count("double") == 3


def _trial(means: list[float], start_s: float, status: str = "ok") -> dict:
    parts = {p: 1.0 for p in FRAMEWORK_PARTS}
    rounds = [{"round": 1, "round_time_s": 99.0, "comm_time_s": 1.0, "framework_time_s": 9.0, "parts": parts,
               "host_cpu_busy": 0.9}]
    rounds += [{"round": i + 2, "round_time_s": m, "comm_time_s": 1.0, "framework_time_s": m - 1,
                "parts": {**parts, "clientapp_start_s": start_s}, "host_cpu_busy": 0.5} for i, m in enumerate(means)]
    return {"status": status, "rounds": rounds}


def test_the_summary_pools_steady_rounds_of_the_trials_that_finished() -> None:
    s = D.summary([_trial([10.0, 12.0], 2.0), _trial([14.0, 14.0], 2.0), {"status": "failed"}])
    assert s["trials"] == 2 and s["steady_mean_s"] == pytest.approx(12.5)  # round 1 left out
    assert s["trial_means_s"] == [11.0, 14.0] and s["parts_s"]["clientapp_start_s"] == 2.0
    assert D.summary([{"status": "failed"}]) is None


def test_the_table_says_how_far_doubling_the_dilation_moved_the_round_and_each_part() -> None:
    auto, double = D.summary([_trial([10.0], 2.0)]), D.summary([_trial([9.0], 1.5)])
    data = {"date": "d", "machine": "m", "factor": 2.0, "rounds": 3, "commit": "abc", "made_by": {},
            "rows": [{"row": "r-4", "auto_dilation": 4.0, "auto": auto, "double": double,
                      "estimate_steady_mean_s": 9.2},
                     {"row": "q-4", "auto_dilation": 4.0, "auto": auto, "double": None,
                      "estimate_steady_mean_s": 9.2}]}
    text = dilation_markdown(data)
    assert "| r-4 | 4 | 1 | 10.00 s (10.00 s) |" in text and "| r-4 | 8 | 1 | 9.00 s (9.00 s) |" in text
    assert "moved the steady round by -10.0 %" in text and "clientapp_start -0.50 s" in text
    assert "| q-4 | 8 | 0 | failed |" in text and "**q-4**" not in text  # no comparison without both sides


def test_the_cpu_cap_table_sets_each_cap_against_its_share_and_says_what_the_cap_gave() -> None:
    from fedbw.report.validation_table import cpu_cap_markdown

    data = {"date": "d", "machine": "m", "repeats": 3, "rows": [
        {"workload": "loop", "factor": 1, "wall_s": 1.0, "cpu_s": 1.2, "slowdown_per_share": 1.0},
        {"workload": "loop", "factor": 4, "wall_s": 5.0, "cpu_s": 1.2, "slowdown_per_share": 1.25,
         "delivered_share": 0.96}]}
    text = cpu_cap_markdown(data)
    assert "| loop | 1.00 s (1.20 s) | 5.00 s (1.25×; 1.20 s; 0.96) |" in text
    assert "| workload | uncapped: wall (CPU) | cap 1/4: wall (÷ K × uncapped; CPU; cap gave) |" in text
    assert "periods of 100 ms" in text and "periods of 400 ms" in cpu_cap_markdown({**data, "period_ms": 400.0})


def test_the_cpu_cap_benchmark_counts_the_workloads_cpu_time() -> None:
    """The cap's delivered share is the work's CPU time over what the cap allowed: _timed must return the
    child's own CPU time (a busy loop's is near its wall time; a sleep's near zero)."""
    cpu_cap = load_benchmark("cpu_cap")
    wall, cpu = cpu_cap._timed("s = 0\nfor i in range(3_000_000):\n    s += i\n", None)
    assert 0.5 * wall < cpu <= wall * 1.5
    wall, cpu = cpu_cap._timed("import time\ntime.sleep(0.5)\n", None)
    assert wall >= 0.5 and cpu < 0.3


def test_the_period_table_sets_each_caps_cpu_at_each_period_against_the_uncapped_cpu() -> None:
    from fedbw.report.validation_table import cpu_cap_periods_markdown

    data = {"date": "d", "machine": "m", "repeats": 3, "periods_ms": [100, 400], "rows": [
        {"workload": "start", "factor": 1, "period_ms": None, "cpu_s": 2.0},
        {"workload": "start", "factor": 8, "period_ms": 100, "cpu_s": 2.5},
        {"workload": "start", "factor": 8, "period_ms": 400, "cpu_s": 2.1}]}
    text = cpu_cap_periods_markdown(data)
    assert "| workload | uncapped CPU | cap 1/8: CPU at 100 ms / 400 ms |" in text
    assert "| start | 2.00 s | 2.50 s (+25.0 %) / 2.10 s (+5.0 %) |" in text


def test_compare_periods_refuses_a_bad_list(monkeypatch, capsys) -> None:
    cpu_cap = load_benchmark("cpu_cap")
    monkeypatch.setattr("sys.argv", ["cpu_cap.py", "--compare-periods", "100"])
    with pytest.raises(SystemExit) as exit_info:
        cpu_cap.main()
    assert exit_info.value.code == 2 and "two or more periods" in capsys.readouterr().err
