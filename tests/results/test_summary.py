"""A run's summary from its records alone: critical-path parts, bytes by stage, accuracy over time."""

import pytest

from fedbw.results.records import ClientRoundRecord, RoundRecord, StageRecord
from fedbw.results.summary import summarize, time_to_accuracy


def _client(rnd, cid, profile, stages, dropped=False):
    return ClientRoundRecord("r", "simulate", rnd, cid, profile, stages, dropped=dropped)


def _round(rnd, t, comm, acc=None, stages=None):
    return RoundRecord("r", "simulate", rnd, 2, t, comm, t - comm, 0.0, stages or {"fit": t}, 0, 0, accuracy=acc)


def test_round_parts_follow_each_stages_slowest_client_and_dropped_clients_do_not_count():
    fast = [StageRecord("setup", 100, 50, 0.1, 0.0, 0.1), StageRecord("fit", 1000, 2000, 0.5, 1.0, 1.0)]
    slow_fit = [StageRecord("setup", 100, 50, 0.3, 0.0, 0.2), StageRecord("fit", 1000, 2000, 0.5, 1.0, 4.0)]
    huge = [StageRecord("fit", 9e9, 9e9, 99.0, 0.0, 99.0)]
    clients = [_client(1, 0, "home-80", fast), _client(1, 1, "home-30", slow_fit),
               _client(1, 2, "home-30", huge, dropped=True)]
    s = summarize("r", clients, [_round(1, 6.5, 5.0, stages={"setup": 0.5, "fit": 6.0})])
    # setup's slowest client: 0.3 down + 0.2 up (total 0.5); fit's: 0.5 down + 4.0 up (total 5.5)
    assert s.mean_download_s == pytest.approx(0.3 + 0.5) and s.mean_upload_s == pytest.approx(0.2 + 4.0)
    assert s.mean_stage_times_s == {"setup": 0.5, "fit": 6.0}
    assert s.bytes_by_stage == {"setup": {"up": 50, "down": 100}, "fit": {"up": 2000, "down": 1000}}
    assert s.mean_bytes_up_per_client == 2050  # the dropped client's 9 GB are not an average client's
    assert s.profiles == ["home-30", "home-80"]
    assert s.bandwidth_bound and s.mean_comm_fraction == pytest.approx(5.0 / 6.5)


def test_accuracy_curve_adds_round_times_and_time_to_target_is_the_first_round_reaching_it():
    rounds = [_round(2, 3.0, 0.1, acc=0.6), _round(1, 2.0, 0.1, acc=0.4), _round(3, 4.0, 0.1)]
    s = summarize("r", [], rounds)  # records may come in any order; round 3 measured no accuracy
    assert s.accuracy_curve == [(1, 2.0, 0.4), (2, 5.0, 0.6)]
    assert time_to_accuracy(s, 0.5) == 5.0 and time_to_accuracy(s, 0.4) == 2.0
    assert time_to_accuracy(s, 0.7) is None
    assert not s.bandwidth_bound and s.final_accuracy == 0.6
