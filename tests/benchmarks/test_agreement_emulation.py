"""benchmarks/agreement.py's emulation case with several emulate runs per row: emulate against itself,
the bound it puts on any model, the rounds pooled with their standard error, and a failed trial that does
not lose the others."""

from __future__ import annotations

import statistics
from pathlib import Path
from types import SimpleNamespace

import pytest

from fedbw.errors import FedbwError
from tests.benchmark_module import load_benchmark

bench = load_benchmark("agreement")


def _t(rnd: int, direction: str, seconds: float) -> dict:
    return {"round": rnd, "client": 0, "stage": "fit", "dir": direction, "emulate_s": seconds}


def test_emulate_against_itself_pairs_the_same_transfer_and_bounds_any_model() -> None:
    a = [_t(1, "up", 10.0), _t(1, "down", 3.0), _t(2, "up", 0.5)]
    b = [_t(1, "up", 10.1), _t(1, "down", 3.3), _t(2, "up", 0.6)]  # +1 %, +10 %, and one under 1 s in both
    rep = bench.repeatability([a, b])
    assert rep["pairs"] == 2 and rep["within_2pct"] == 1
    assert rep["median_abs_diff"] == pytest.approx(0.055) and rep["max_abs_diff"] == pytest.approx(0.1)
    # 10.0 / 10.1: one model time within 2 % of both; 3.0 / 3.3 are 10 % apart: at most one of them
    assert rep["model_bound"] == 3
    # 4 % apart is still reachable by one time in between (1.02 / 0.98 = 1.0408), 4.1 % is not
    assert bench.repeatability([[_t(1, "up", 10.0)], [_t(1, "up", 10.4)]])["model_bound"] == 2
    assert bench.repeatability([[_t(1, "up", 10.0)], [_t(1, "up", 10.41)]])["model_bound"] == 1
    assert bench.repeatability([a]) is None
    # three runs: every pair of them
    assert bench.repeatability([a, b, a])["pairs"] == 6


def test_standard_error_of_the_mean() -> None:
    assert bench.standard_error([1.0, 2.0, 3.0]) == pytest.approx(1 / 3 ** 0.5)
    assert bench.standard_error([5.0]) is None


def _stage(down: float, up: float) -> SimpleNamespace:
    return SimpleNamespace(stage="fit", t_down_s=down, t_up_s=up, t_host_s=0.1)


def _run(tmp: Path, rounds: list[float], ups: list[float]) -> SimpleNamespace:
    host = SimpleNamespace(dilation=3.0, cpu_capped=True, share=0.02, bound=False, cpu_busy=0.2)
    return SimpleNamespace(
        run_dir=tmp,  # no emulate.json: the push's end unknown
        clients=[SimpleNamespace(round=i + 1, client_id=0, stages=[_stage(3.0, up)]) for i, up in enumerate(ups)],
        rounds=[SimpleNamespace(round=i + 1, round_time_s=t, comm_time_s=t / 2, framework_time_s=1.0, host=host,
                                extra={}) for i, t in enumerate(rounds)])


def test_a_row_pools_the_runs_rounds_and_compares_the_runs(tmp_path: Path) -> None:
    sim = _run(tmp_path, [20.0, 20.0, 20.0], [10.0, 10.0, 10.0])
    sim.rounds = [SimpleNamespace(**{**vars(r), "host": None}) for r in sim.rounds]
    one = _run(tmp_path, [22.0, 21.0, 23.0], [10.1, 10.2, 10.3])
    two = _run(tmp_path, [22.0, 20.0, 22.0], [10.1, 11.0, 10.3])
    row = bench.emulation_row(2, sim, [one, two])
    assert row["trials"] == 2 and row["transfers_ge_1s"] == 12  # 3 rounds × down and up × 2 runs
    assert row["emulate_round_s"] == pytest.approx(statistics.mean([21.0, 23.0, 20.0, 22.0]))
    assert row["emulate_round_sem_s"] == pytest.approx(statistics.stdev([21.0, 23.0, 20.0, 22.0]) / 2)
    assert row["emulate_trials_round_s"] == [pytest.approx(22.0), pytest.approx(21.0)]
    assert len(row["emulate_rounds_s"]) == 6 and {t["trial"] for t in row["transfers"]} == {0, 1}
    rep = row["emulate_repeat"]
    assert rep["pairs"] == 6 and rep["within_2pct"] == 5  # round 2's upload: 10.2 against 11.0
    assert bench.emulation_row(2, sim, [one])["emulate_repeat"] is None


def test_a_failed_trial_does_not_lose_the_others(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = []

    def fake(cfg: dict, out: Path, fresh: bool = False) -> tuple[object, float]:
        calls.append(fresh)
        if len(calls) == 1:
            raise FedbwError("a SuperNode died\nsecond line")
        return SimpleNamespace(run_dir=out), 2.0

    monkeypatch.setattr(bench, "emulate_at_host_speed", fake)
    monkeypatch.setattr(bench, "TRIALS", [2])
    cfg = {**bench.EMULATION_CONFIG, "name": "emulation-2", "training": {"rounds": 2},
           "clients": {**bench.EMULATION_CONFIG["clients"], "total": 2, "per_round": 2}, "emulate": {"dilation": 3.0}}
    trials, failures = bench.emulate_trials(cfg, tmp_path)
    assert len(trials) == 1 and failures == ["a SuperNode died"] and calls == [True, True]


def test_caps_periods_give_a_row_each_in_the_order_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """--cap-periods 100,400,400,100: one emulate config per entry, in that order, each with its period and a
    name of its own; each row says its period."""
    asked = []

    def trials(cfg: dict, out: Path) -> tuple[list, list]:
        asked.append((cfg["name"], cfg["emulate"]))
        return [(SimpleNamespace(), None)], []

    monkeypatch.setattr(bench, "emulate_trials", trials)
    monkeypatch.setattr(bench, "model_calibration", lambda out, ref: (None, 1.0))
    monkeypatch.setattr(bench, "run", lambda cfg, engine, out: None)
    monkeypatch.setattr(bench, "with_calibration", lambda cfg, cal: cfg)
    monkeypatch.setattr(bench, "emulation_row", lambda n, sim, runs: {"clients": n})
    monkeypatch.setattr(bench, "calibration_record", lambda: None)
    result = bench.emulation(tmp_path, 3, [8], ["7"], [100, 400, 400, 100])
    assert [e["cap_period_ms"] for _, e in asked] == [100, 400, 400, 100]
    assert {e["dilation"] for _, e in asked} == {7.0}
    assert len({name for name, _ in asked}) == 4  # a name per entry: --reuse resumes each
    assert [name for name, _ in asked][:2] == ["emulation-8-1-period-100", "emulation-8-2-period-400"]
    assert [r["cap_period_ms"] for r in result["rows"]] == [100, 400, 400, 100]
    bench.emulation(tmp_path, 3, [8], ["7"])
    assert asked[-1] == ("emulation-8", {"dilation": 7.0})  # without periods: emulate's own, as before


def test_remodel_sets_the_kept_emulate_runs_beside_a_new_simulate_and_leaves_emulate_alone(
        tmp_path: Path, monkeypatch) -> None:
    """A model change costs a simulate run, not the emulations again: the row's model figures come from the
    new simulate, emulate's stay the original run's, and the result says it was remodelled."""
    import json

    sim_then = _run(tmp_path, [20.0, 20.0, 20.0], [10.0, 10.0, 10.0])
    sim_then.rounds = [SimpleNamespace(**{**vars(r), "host": None}) for r in sim_then.rounds]
    emu = _run(tmp_path, [22.0, 21.0, 23.0], [10.1, 10.2, 10.3])
    row = {**bench.emulation_row(2, sim_then, [emu]), "cap_period_ms": 100}
    data = {"case": "emulation", "date": "then", "machine": "m", "rows": [row], "rounds": 3, "trials": 1,
            "config": {"clients": {"total": 2, "per_round": 2}}, "calibration": {"file": "catalog"},
            "made_by": {"model_version": "m-old", "calibration": "c-x"}}
    path = tmp_path / "agreement-cap-period.json"
    path.write_text(json.dumps(data))
    sim_now = _run(tmp_path, [25.0, 25.0, 25.0], [12.0, 12.0, 12.0])
    sim_now.rounds = [SimpleNamespace(**{**vars(r), "host": None}) for r in sim_now.rounds]
    calls = []
    monkeypatch.setattr(bench, "run", lambda cfg, engine, out: calls.append((cfg["name"], engine)) or sim_now)
    out = bench.remodel(path, tmp_path)
    assert calls == [("emulation-2", "simulate")]
    (new,) = out["rows"]
    assert new["emulate_rounds_s"] == row["emulate_rounds_s"] and new["emulate_round_s"] == row["emulate_round_s"]
    assert new["simulate_round_s"] == pytest.approx(25.0) and new["round_error"] == pytest.approx(22.0 / 25.0 - 1)
    ups = [t for t in new["transfers"] if t["dir"] == "up"]
    assert [t["simulate_s"] for t in ups] == [12.0] * 3 and ups[0]["error"] == pytest.approx(10.1 / 12.0 - 1)
    assert new["transfers_within_2pct"] == 3 and new["cap_period_ms"] == 100  # the downloads, 3.0 s in both
    assert out["remodelled"][0]["previous"] == {"date": "then", "made_by": {"model_version": "m-old",
                                                                             "calibration": "c-x"}}
    from fedbw.netmodel.version import model_version

    assert out["made_by"]["model_version"] == model_version()
    # only emulation results: another case is refused with one line
    path.write_text(json.dumps({**data, "case": "deployment"}))
    with pytest.raises(SystemExit, match="emulation result"):
        bench.remodel(path, tmp_path)


def test_remodel_refuses_a_file_that_is_not_json_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("not json")
    with pytest.raises(SystemExit, match="not a readable result file"):
        bench.remodel(bad, tmp_path)
