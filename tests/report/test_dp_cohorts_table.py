"""docs/privacy-overhead.md's "DP and the cohort" block: accuracy against plain in points, ε with its terms,
the re-timed rounds, and the smallest cohort at which DP comes within a few points of plain."""

from __future__ import annotations

from fedbw.calibration.file import load_costs, model_stamp
from fedbw.report.dp_cohorts_table import closest_cohorts, dp_cohorts_markdown


def _row(kind: str, n: int, profile: str, acc: float, eps: float | None) -> dict:
    return {"variant": f"{kind}@{n}", "kind": kind, "cell": {"clients.per_round": n}, "profile": profile,
            "accuracy": acc, "epsilon": eps, "epsilon_delta": None if eps is None else 1e-5,
            "epsilon_sampling": None if eps is None else "fixed", "epsilon_adjacency": None if eps is None else
            "replace-one", "rounds": 20, "round_time_s": 9.0 if profile == "home-30" else 8.0,
            "round_interval_s": [6.0, 9.1]}


def _data(dp_at_100: float = 0.88) -> dict:
    rows = []
    for p in ("home-30", "home-80"):
        rows += [_row("plain", 10, p, 0.90, None), _row("dp", 10, p, 0.30, 8.0),
                 _row("plain", 100, p, 0.91, None), _row("dp", 100, p, dp_at_100, 12.5)]
    return {"grid": {"clients.per_round": [10, 100]}, "baseline": "plain", "profiles": ["home-30", "home-80"],
            "engine": "simulate", "command": "fedbw study x.toml", "started_utc": "t", "environment": {},
            "made_by": model_stamp(load_costs(None)), "rows": rows}


def test_one_line_per_cohort_and_variant_with_points_against_plain_and_eps_terms() -> None:
    text = dp_cohorts_markdown(_data())
    assert "| clients.per_round | variant | accuracy (vs plain, points) | ε | rounds | round on home-30 |" in text
    assert "| 10 | dp | 30.0 % (−60.0) | 8 (δ 1e-05, fixed, replace-one) | 20 | 9.00 s [6.00–9.10] |" in text
    assert "| 100 | plain | 91.0 % | - |" in text
    assert "dp: clients.per_round = 100" in text


def test_the_closest_cohort_is_the_first_within_the_points_or_none() -> None:
    assert closest_cohorts(_data(0.88)) == {"dp": 100}  # 3.0 points below plain: within
    assert closest_cohorts(_data(0.87)) == {"dp": None}
    assert "dp: not within the cohorts run" in dp_cohorts_markdown(_data(0.80))


def test_the_answer_reads_secagg_off_the_scale_study_and_dp_off_the_cohort_study() -> None:
    from fedbw.report.dp_cohorts_table import answer_markdown

    def srow(kind: str, model: str, n: int, rr: float, up: float) -> dict:
        return {"kind": kind, "variant": kind, "cell": {"model.name": model, "clients.per_round": n},
                "profile": "home-30", "round_ratio": rr, "uplink_ratio": up}

    scale = {"grid": {"model.name": ["small-cnn"], "clients.per_round": [10, 1000]}, "profiles": ["home-30"],
             "command": "fedbw study s.toml", "started_utc": "t",
             "rows": [srow("secagg-stock", "small-cnn", 10, 3.9, 2.0), srow("secagg-packed", "small-cnn", 10, 3.8, 1.0),
                      srow("secagg-stock", "small-cnn", 1000, 3.0, 2.0)]}
    text = answer_markdown(scale, _data())
    assert "| SecAgg+ for small-cnn, 10 clients per round, home-30 | round 3.90×, up 2.00× | round 3.80×, up 1.00× |" \
        in text
    assert "| SecAgg+ for small-cnn, 1000 clients per round, home-30 | round 3.00×, up 2.00× | - |" in text
    # dp comes within 3 points at 100: 88 % against 91 %, ε 12.5, 100 rounds of 9 s on home-30 = 0.25 h
    assert "| dp | 100 | 88.0 % (plain 91.0 %) | 12.5 | home-30 0.25 h, home-80 0.22 h |" in text
    assert "| dp | more than 100 |" in answer_markdown(None, _data(0.5))
