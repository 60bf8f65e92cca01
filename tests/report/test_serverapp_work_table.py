"""docs/fidelity.md's table of the ServerApp's own work: each model's push and pull beside the clock's, and the
fit over every model."""

from __future__ import annotations

from fedbw.report.serverapp_work_table import serverapp_work_markdown


def _work(objects: int, push: float, pull: float, behind: int) -> dict:  # type: ignore[type-arg]
    fitted = {"hop_object_s": None, "hop_s_per_mib": None}
    return {"push": {"messages": 4, "objects": [objects], "median_measured_s": push, "median_predicted_s": 0.05,
                     "median_measured_over_predicted": push / 0.05, "fitted": fitted},
            "pull": {"messages": 4 - behind, "objects": [objects + 3], "pulled_behind_the_upload": behind,
                     "median_measured_s": pull, "median_predicted_s": 1.0, "median_measured_over_predicted": pull,
                     "fitted": fitted}}


def _data() -> dict:  # type: ignore[type-arg]
    every = _work(604, 3.0, 4.0, 1)
    every["push"]["fitted"] = {"hop_object_s": 0.005, "hop_s_per_mib": 0.0012}
    every["pull"]["fitted"] = {"hop_object_s": 0.0065, "hop_s_per_mib": 0.0}
    first = {"rounds": 4, "started_utc": "s1", "ended_utc": "e1", "cpu": "AMD EPYC", "machine": "m", "commit": "abc",
             "runs": [{"model": "1M", "work": _work(604, 3.0, 4.0, 1)}, {"model": "3M", "error": "round 2: boom"}]}
    second = {**first, "rounds": 8, "started_utc": "s2", "commit": "def",
              "runs": [{"model": "1M", "work": _work(604, 2.0, 3.0, 0)}]}
    return {"dilation": 7.0, "made_by": None,
            "calibration": {"path": "benchmarks/results/c.toml", "fingerprint": "c-1", "cpu": "AMD EPYC",
                            "hop_object_s": 0.0054, "hop_s_per_mib": 0.0103, "local_s_per_mib": 0.016},
            "measurements": [first, second], "all": every}


def test_each_measurement_sets_every_models_measured_push_and_pull_beside_the_clocks() -> None:
    text = serverapp_work_markdown(_data())
    lines = text.splitlines()
    assert "| 1 | 1M | 604/607 | 4 | 3.00 s | 50.00 ms | ×60.00 | 3 (4) | 4.00 s | 1.00 s | ×4.00 |" in lines
    assert "| 2 | 1M | 604/607 | 4 | 2.00 s | 50.00 ms | ×40.00 | 4 (4) | 3.00 s | 1.00 s | ×3.00 |" in lines
    assert "| 1 | 3M | failed: round 2: boom |" in text
    assert "push 5.00 ms/object + 1.20 ms/MiB (4 pushes), pull 6.50 ms/object + 0.00 ms/MiB (3 pulls)" in text
    assert "(local copy: 16.00 ms/MiB)" in text and "(5.40 ms/object + 10.30 ms/MiB)" in text
    assert "1: 4 rounds a model, s1 – e1" in text and "2: 8 rounds a model, s2 – e1" in text and "commit def" in text
