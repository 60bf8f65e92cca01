"""benchmarks/serverapp_work.py: its input checks end in a usage error before any run."""

from __future__ import annotations

import pytest

from tests.benchmark_module import load_benchmark

S = load_benchmark("serverapp_work")


@pytest.mark.parametrize("args", [["--models", "vgg"], ["--models", ","], ["--rounds", "0"],
                                  ["--calibration", "/nonexistent/calibration.toml"]])
def test_bad_input_ends_in_a_usage_error_before_any_run(args: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        S.main(args)
    assert exc.value.code == 2


def test_again_sets_the_kept_messages_against_the_current_model_without_emulating(tmp_path, monkeypatch) -> None:
    """A kept result of one model (a push of 600 objects, a pull after the upload and one behind it) timed again:
    every run's and all runs' work recomputed from the rows, the model's stamp and the calibration renewed."""
    import json

    from fedbw.netmodel.version import model_version

    row = {"round": 1, "objects_down": 600, "objects_up": 603, "flower_bytes_down": 4e6, "flower_bytes_up": 4e6,
           "push_s": 1.8, "pushed_with": 1, "pull_s": 1.5, "pulled_with": 1, "up_s": 4.0, "serverapp_poll_s": 2.0,
           "pull_after_upload": True}
    behind = {**row, "round": 2, "pull_s": 3.0, "serverapp_poll_s": 0.2, "pull_after_upload": False}
    measurement = {"rounds": 2, "started_utc": "s", "ended_utc": "e", "machine": "m", "cpu": "AMD EPYC",
                   "commit": "abc", "runs": [{"model": "1M", "messages": [row, behind]}, {"model": "3M", "error": "boom"}]}
    kept = {"benchmark": "serverapp-work", "dilation": 7.0, "measurements": [measurement, measurement],
            "calibration": {"path": "benchmarks/results/calibration-dilation7-amd-epyc.toml", "fingerprint": "c-x"}}
    out = tmp_path / "serverapp-work.json"
    out.write_text(json.dumps(kept), encoding="utf-8")
    monkeypatch.setattr(S, "OUT", out)
    assert S.main(["--again"]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert len(data["measurements"]) == 2  # --again measures nothing new
    runs = data["measurements"][1]["runs"]
    pull, push = runs[0]["work"]["pull"], runs[0]["work"]["push"]
    assert pull["messages"] == 1 and pull["pulled_behind_the_upload"] == 1 and pull["median_measured_s"] == 1.5
    assert push["messages"] == 2 and push["median_measured_s"] == 1.8 and push["median_predicted_s"] > 0
    assert data["all"]["push"]["messages"] == 4 and runs[1] == {"model": "3M", "error": "boom"}
    assert data["made_by"]["model_version"] == model_version() and data["calibration"]["cpu"] == "AMD EPYC"
    assert data["calibration"]["fingerprint"].startswith("c-")


def test_a_measurement_against_another_calibration_is_refused_before_it_runs(tmp_path, monkeypatch) -> None:
    """A result keeps the calibration it began with: a new measurement beside it under another one would mix
    clocks in one table, so it ends in a usage error before any emulation."""
    import json

    out = tmp_path / "serverapp-work.json"
    out.write_text(json.dumps({"dilation": 7.0, "measurements": [], "calibration": {
        "path": "benchmarks/results/calibration-dilation7-amd-epyc.toml", "fingerprint": "c-another"}}), encoding="utf-8")
    monkeypatch.setattr(S, "OUT", out)
    monkeypatch.setattr(S, "measure", lambda *a: pytest.fail("measured despite the other calibration"))
    with pytest.raises(SystemExit) as exc:
        S.main([])
    assert exc.value.code == 2


@pytest.mark.parametrize("kept", [None, "{not json", '{"runs": []}', "[1, 2]"])
def test_again_without_a_kept_result_of_this_benchmark_ends_in_a_usage_error(tmp_path, monkeypatch,
                                                                              kept: str | None) -> None:
    out = tmp_path / "serverapp-work.json"
    if kept is not None:
        out.write_text(kept, encoding="utf-8")
    monkeypatch.setattr(S, "OUT", out)
    monkeypatch.setattr(S, "measure", lambda *a: pytest.fail("measured despite a result it cannot add to"))
    for args in (["--again"], []):
        if kept is None and not args:
            continue  # no result yet: a measurement starts one
        with pytest.raises(SystemExit) as exc:
            S.main(args)
        assert exc.value.code == 2
