"""docs/privacy-overhead.md's "At scale" table renders each grid cell and profile from the study's JSON:
the baseline's round with its interval, each other variant's round (and uplink, where it differs) against it."""

from __future__ import annotations

from fedbw.calibration.file import load_costs, model_stamp
from fedbw.report.privacy_scale_table import privacy_at_scale_markdown


def _row(kind: str, n: int, round_s: float, round_ratio: float, up: float) -> dict:
    return {"variant": f"{kind}@{n}", "kind": kind, "cell": {"clients.per_round": n}, "profile": "home-30",
            "round_time_s": round_s, "round_interval_s": [round_s - 1, round_s + 1], "round_ratio": round_ratio,
            "uplink_ratio": up}


def test_one_line_per_cell_and_profile_with_ratios_against_the_cells_baseline() -> None:
    data = {"grid": {"clients.per_round": [10, 100]}, "baseline": "plain", "profiles": ["home-30"],
            "engine": "estimate", "command": "fedbw study x.toml", "started_utc": "t", "environment": {},
            "made_by": model_stamp(load_costs(None)),
            "rows": [_row("plain", 10, 7.0, 1.0, 1.0), _row("stock", 10, 24.5, 3.5, 2.0),
                     _row("plain", 100, 9.5, 1.0, 1.0), _row("stock", 100, 26.6, 2.8, 2.0)]}
    text = privacy_at_scale_markdown(data)
    assert "| clients.per_round | profile | plain round | stock: round (up) |" in text
    assert "| 10 | home-30 | 7.00 s [6.00–8.00] | 3.50× (2.00×) |" in text
    assert "| 100 | home-30 | 9.50 s [8.50–10.50] | 2.80× (2.00×) |" in text
    assert "plain's rounds span 7.00 s to 9.50 s" in text
    data["rows"][1]["uplink_ratio"] = 1.0
    assert "| 10 | home-30 | 7.00 s [6.00–8.00] | 3.50× |" in privacy_at_scale_markdown(data)  # equal bytes: not shown


def test_the_secagg_check_reports_bytes_and_unmasking_against_their_targets() -> None:
    from fedbw.report.privacy_scale_table import secagg_scale_markdown

    data = {"targets": {"bytes": 0.01, "server": 0.10}, "vector_len": 100_000, "repeats": 2, "date": "d",
            "machine": "m", "made_by": model_stamp(load_costs(None)),
            "bytes": [{"clients": 3, "stage": "setup", "direction": "up", "measured_bytes": 1000.0,
                       "predicted_bytes": 1005.0, "error": 0.005}],
            "server": [{"clients": 5, "shares": 3, "dropped": 0, "measured_s": 0.02, "model_s": 0.021, "error": 0.05},
                       {"clients": 5, "shares": 3, "dropped": 2, "measured_s": 0.04, "model_s": 0.05, "error": 0.25,
                        "dropped_cost_measured_s": 0.02, "dropped_cost_model_s": 0.029}]}
    text = secagg_scale_markdown(data)
    assert "| 3 | setup | up | 1,000 | 1,005 | +0.50 % |" in text and "largest |error| 0.50 % (within" in text
    assert "| 5 | 3 | 2 | 40.00 ms | 50.00 ms | +25.00 % | 20.00 ms / 29.00 ms |" in text
    assert "1 of 2 within 10 %" in text


def test_rounds_with_dropouts_show_their_range_what_completed_and_the_survival_table() -> None:
    from fedbw.report.privacy_scale_table import secagg_scale_markdown

    data = {"targets": {"bytes": 0.01, "server": 0.10}, "vector_len": 100_000, "repeats": 2, "dropout_repeats": 6,
            "date": "d", "machine": "m", "made_by": model_stamp(load_costs(None)),
            "server": [{"clients": 20, "shares": 3, "dropped": 0, "measured_s": 0.06, "model_s": 0.06, "error": 0.0},
                       {"clients": 20, "shares": 3, "dropped": 2, "measured_s": 0.07, "model_s": 0.08, "error": 0.14,
                        "dropped_cost_measured_s": 0.01, "dropped_cost_model_s": 0.02, "runs": 6, "halted_runs": 1,
                        "model_completes": 0.787, "measured_range_s": [0.065, 0.09]},
                       {"clients": 20, "shares": 3, "dropped": 6, "halted": True, "runs": 6, "halted_runs": 6,
                        "model_completes": 0.002}],
            "survival": [{"clients": 100, "shares": 3, "threshold": 2, "dropout": 0.1, "completes": 0.117}],
            "combine_key": [{"shares": 3, "lost": 0, "combine_s": 0.001}, {"shares": 3, "lost": 1, "combine_s": 0.009}]}
    text = secagg_scale_markdown(data)
    assert "(rounds 65.00 ms–90.00 ms; rounds completed 5 of 6, model 79 %)" in text
    assert "every round gave up (6)" in text and "rounds completed 0 of 6, model 0 %" in text
    assert "| 100 | 3 | 10 % | 11.7 % |" in text
    assert "3 shares 1.00 ms–9.00 ms" in text and "the mean of 6 rounds, those that finished" in text


def test_earlier_runs_of_the_check_show_how_far_the_host_moved() -> None:
    from fedbw.report.privacy_scale_table import secagg_scale_markdown

    rows = [{"clients": 5, "shares": 3, "dropped": 0, "measured_s": 0.022, "model_s": 0.02, "error": -0.09,
             "model_now_s": 0.021, "error_now": -0.05},
            {"clients": 10, "shares": 3, "dropped": 0, "measured_s": 0.040, "model_s": 0.04, "error": 0.0,
             "model_now_s": 0.046, "error_now": 0.15}]
    data = {"targets": {"bytes": 0.01, "server": 0.10}, "vector_len": 100_000, "repeats": 2, "date": "d",
            "server_date": "2026-12-06 03:00 UTC", "machine": "m", "made_by": model_stamp(load_costs(None)),
            "server": rows, "earlier_server": [{"date": "2026-12-06 02:29 UTC", "rows": [
                {"clients": 5, "shares": 3, "dropped": 0, "measured_s": 0.020},
                {"clients": 10, "shares": 3, "dropped": 0, "measured_s": 0.040},
                {"clients": 40, "shares": 3, "dropped": 0, "measured_s": 0.1}]}]}
    text = secagg_scale_markdown(data)
    assert "Measured 2026-12-06 03:00 UTC" in text
    assert "+0.00 % to +10.00 % against the run of 2026-12-06 02:29 UTC (median +5.00 %, 2 rows)" in text
    assert "Measured again" not in secagg_scale_markdown({**data, "earlier_server": []})
    # a run made by the same model and constants also gets its verdict: 0.020 against 0.02 is within 10 %
    data["earlier_server"][0]["made_by"] = data["made_by"]
    assert "(median +5.00 %, 2 rows; that run within 10 % in 2 of 2)" in secagg_scale_markdown(data)
    # the model on constants timed in the run itself: its own error, apart from the host's drift
    assert "timed in this run, at its start (not the calibration's): within 10 % in 1 of 2 rows, errors −5.00 % to " \
        "+15.00 %" in text
    assert "timed in this run, just before each cell's rounds" in secagg_scale_markdown(
        {**data, "primitives_timed": "per cell"})
    # a run that took each cell's median says so, and an earlier run taken another way is marked as such
    median = secagg_scale_markdown({**data, "estimator": "median", "dropout_repeats": 6})
    assert "the median of 6 rounds, those that finished, with and without dropouts" in median
    assert "2 of 2; that run took the fastest round without dropouts, the mean with them)" in median


def test_the_unmask_stage_part_by_part_counts_flowers_calls_and_sets_each_part_against_the_model() -> None:
    from fedbw.report.privacy_scale_table import unmask_parts_markdown

    def part(calls: float, measured: float, model_calls: float | None = None, model: float = 0.0) -> dict:
        out = {"calls": calls, "measured_s": measured}
        if model_calls is not None:
            out.update(model_calls=model_calls, model_s=model, model_now_s=model / 2)
        return out

    rows = [{"parts_stage_s": 0.1, "parts": {"combine_seed": part(10, 0.02, 10, 0.01), "prg": part(12, 0.03, 12, 0.03),
                                              "aggregate_fit": part(1, 0.01), "bookkeeping": part(0, 0.04)}},
            {"parts_stage_s": 0.2, "parts": {"combine_seed": part(20, 0.08, 20, 0.02), "prg": part(25, 0.06, 24, 0.06),
                                              "aggregate_fit": part(1, 0.02), "bookkeeping": part(0, 0.04)}},
            {"measured_s": 1.0}]  # a cell measured without a trace is left out
    text = unmask_parts_markdown(rows)
    assert "| `combine_seed` | 2 of 2 | 3.00 [2.00–4.00] | 6.00 [4.00–8.00] | 30 % |" in text
    assert "| `prg` | 1 of 2 | 1.00 [1.00–1.00] | 2.00 [2.00–2.00] | 30 % |" in text  # 25 calls, the model 24
    assert "| `aggregate_fit` | - | - | - | 10 % |" in text and "| `bookkeeping` | - | - | - | 30 % |" in text
    assert "over the 2 cells" in text
    assert unmask_parts_markdown([{"measured_s": 1.0}]) == ""


def test_the_unmask_check_sets_secaggs_work_against_the_model_and_earlier_runs_whole_stage_against_theirs() -> None:
    """The model's unmask stage is SecAgg+'s work; Flower's stage ends with FedAvg, which the model charges by
    its aggregation term. Since 2026-12-06 the check takes FedAvg out of the measured side, and compares a run
    with earlier runs on the whole stage, which is what they measured."""
    from fedbw.report.privacy_scale_table import secagg_scale_markdown

    rows = [{"clients": 5, "shares": 3, "dropped": 0, "measured_s": 0.016, "stage_s": 0.0176, "model_s": 0.015,
             "error": 0.015 / 0.016 - 1}]
    data = {"targets": {"bytes": 0.01, "server": 0.10}, "vector_len": 100_000, "repeats": 2, "date": "d",
            "machine": "m", "made_by": model_stamp(load_costs(None)), "server": rows, "server_measures": "secagg_work",
            "earlier_server": [{"date": "then", "rows": [{"clients": 5, "shares": 3, "dropped": 0, "measured_s": 0.016}]}]}
    text = secagg_scale_markdown(data)
    assert "unmask stage less FedAvg's aggregate_fit at its end" in text and "1.60 ms to 1.60 ms a round" in text
    assert "1 of 1 within 10 %" in text  # -6.25 %: FedAvg is not the model's unmasking
    assert "+10.00 % to +10.00 % against the run of then" in text  # the whole stage, 17.6 against 16.0 ms
    older = secagg_scale_markdown({**data, "server_measures": None})
    assert "(the whole stage, FedAvg's aggregate_fit included" in older
