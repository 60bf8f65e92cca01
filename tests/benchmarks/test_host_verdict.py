"""benchmarks/host_verdict.py: its input checks, and the validation trials it sets beside its runs."""

from __future__ import annotations

import pytest

from tests.benchmark_module import load_benchmark

H = load_benchmark("host_verdict")


@pytest.mark.parametrize("arg", ["x", "0.5", ","])
def test_bad_dilations_end_in_a_usage_error_before_any_run(arg: str) -> None:
    with pytest.raises(SystemExit) as exc:
        H.main(["--dilations", arg])
    assert exc.value.code == 2


def test_an_unknown_row_ends_in_a_usage_error_before_any_run() -> None:
    with pytest.raises(SystemExit) as exc:
        H.main(["--row", "resnet18-home-30-2"])
    assert exc.value.code == 2


@pytest.mark.parametrize("row", sorted(H.ROWS))
def test_the_validation_trials_are_the_rows_ok_trials_from_the_committed_run_log(row: str) -> None:
    spec, out = H.ROWS[row]
    assert out.startswith("host-verdict") and out.endswith(".json")
    trials = H.validation_trials(spec)
    assert [t["trial"] for t in trials] == [0, 1]
    assert all(t["dilation"] == 7.0 and len(t["host_shares"]) == len(t["cpu_busy"]) for t in trials)
    assert all(all(t["host_bound"]) and len(t["host_bound"]) == len(t["host_shares"]) for t in trials)  # every round
