"""docs/emulate.md's host-verdict table: each run's rounds with the host's and the devices' own time, and the
validation trials from before the split."""

from __future__ import annotations

from fedbw.report.host_verdict_table import host_verdict_markdown


def _data() -> dict:  # type: ignore[type-arg]
    payload = {"round": 1, "client": 0, "direction": "up", "payload_s": 8.0}
    return {
        "row": "1M-home-80-2", "validation": 5, "started_utc": "s", "ended_utc": "e", "cpu": "AMD EPYC",
        "machine": "m", "commit": "abc",
        "runs": [{"dilation": 7.0, "rounds": [
            {"round": 1, "round_time_s": 25.0, "host_bound": False, "host_share": 0.02, "lost_s": 0.5,
             "device_bound_s": 5.5, "server_bound_s": 1.25, "cpu_busy": 0.2, "cpu_saturated": 0.0},
            {"round": 2, "round_time_s": 24.0, "host_bound": False, "host_share": 0.01, "lost_s": 0.2,
             "device_bound_s": 5.0, "cpu_busy": 0.18, "cpu_saturated": 0.04}],
            "payloads": [{**payload, "idle_s": 3.0, "device_busy": 0.9, "request_flight_s": 1.5, "server_busy": 0.3},
                         {**payload, "idle_s": 2.0, "device_busy": 0.7, "request_flight_s": 0.5, "server_busy": 0.5},
                         {**payload, "idle_s": 1.0, "device_busy": None, "request_flight_s": 1.0, "server_busy": None},
                         {**payload, "idle_s": 0.0, "device_busy": 0.1, "request_flight_s": 0.0, "server_busy": 0.9}]}],
        "validation_trials": [{"trial": 0, "dilation": 7.0, "commit": "x", "host_shares": [0.25, 0.03], "host_bound": [True, False],
                               "cpu_busy": [0.2, None]}],
    }


def test_each_round_shows_the_hosts_share_the_devices_own_time_and_the_payloads_cpu_use() -> None:
    text = host_verdict_markdown(_data())
    lines = text.splitlines()
    first = next(line for line in lines if line.startswith("| dilation 7 | 1 |"))
    # half the idle time had a request in flight; medians of 0.9, 0.7 and of 0.3, 0.5 (the idle-free payload out)
    assert "| 0.020 | no | 5.50 s | 1.25 s | 20 % | 0 % | 50 % | 0.80 (1 of 3 unknown) | 0.40 (1 of 3 unknown) |" in first
    assert "| 5.00 s | - | 18 % |" in next(line for line in lines if line.startswith("| dilation 7 | 2 |"))
    second = next(line for line in lines if line.startswith("| dilation 7 | 2 |"))
    assert second.endswith("| 18 % | 4 % |  |  |  |")  # the payloads' cells are the run's, once
    before = [line for line in lines if line.startswith("| validation 5, trial 0")]
    assert "| 0.250 | yes |" in before[0] and "| 0.030 | no |" in before[1] and before[1].count("| - |") == 1 and before[0].endswith("| yes |  |  | 20 % |  |  |  |  |")
    assert "AMD EPYC" in text and "commit abc" in text
    failed = {**_data(), "runs": [{"dilation": 1.25, "error": "round 1: boom", "rounds": [], "payloads": []}]}
    assert "| dilation 1.25 | - | failed: round 1: boom |" in host_verdict_markdown(failed)
