"""docs/population.md's check across engines: per case and round, what each engine called late and dropped."""

from __future__ import annotations

from fedbw.report.population_tables import round_policy_engines_markdown


def _row(case: str, engine: str, rnd: int, late: list[int], dropped: list[int]) -> dict:
    return {"case": case, "engine": engine, "round": rnd, "round_time_s": 40.0, "round_interval_s": None,
            "sampled": 3, "late": late, "dropped": dropped, "client0_down_s": 0.3}


def test_a_case_where_clients_leave_shows_who_dropped_and_counts_rounds_that_agree_on_both() -> None:
    case = "client off line mid-round"
    rows = [_row(case, e, 1, [], [1]) for e in ("estimate", "simulate", "emulate")]
    rows += [_row(case, "estimate", 2, [], []), _row(case, "simulate", 2, [], []), _row(case, "emulate", 2, [], [2])]
    text = round_policy_engines_markdown({"engines": {"date": "d", "rows": rows, "cases": {case: "client 1 leaves"}}})
    assert "late none, dropped 1" in text and "late none, dropped none" in text
    # round 2: emulate dropped a client the others did not
    assert "The same clients late and dropped in every engine in 1 of 2 rounds." in text


def test_a_case_without_dropouts_keeps_its_late_only_cells() -> None:
    case = "over-selection"
    rows = [_row(case, e, 1, [0, 1], []) for e in ("estimate", "simulate", "emulate")]
    text = round_policy_engines_markdown({"engines": {"date": "d", "rows": rows, "cases": {case: "four clients"}}})
    assert "late 0, 1 |" in text and "dropped" not in text.split("The same")[0]
    assert "The same clients late in every engine in 1 of 1 rounds." in text
