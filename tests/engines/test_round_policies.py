"""``[round]`` in the estimate engine (issue 32.2): over-selection samples more clients, the training stage
closes at enough replies or at the deadline, late clients are recorded with their wasted uplink, and a
round with too few replies is abandoned; the engines and settings that do not run it yet say so."""

from __future__ import annotations

import re

import pytest

from fedbw.config import config_from_dict
from fedbw.engines.estimate import run_estimate
from fedbw.errors import ConfigError
from fedbw.plan import build_plan


def _cfg(**round_keys: object) -> dict:
    return {"name": "policy", "engine": "estimate", "model": {"name": "resnet18"},
            "clients": {"total": 20, "per_round": 4, "compute": "synthetic"}, "training": {"rounds": 3},
            "network": {"mix": [{"profile": "home-80", "share": 3}, {"profile": "mobile-4g", "share": 1}]},
            "round": round_keys}


def _run(**round_keys: object):
    return run_estimate(build_plan(config_from_dict(_cfg(**round_keys))), "t")


def test_without_a_policy_every_sampled_client_counts() -> None:
    res = _run()
    assert all(r.num_clients == 4 and r.late_clients == 0 and r.replies == 4 for r in res.rounds)
    assert not any(c.late for c in res.clients)


def test_over_selection_samples_more_and_uses_the_first_replies() -> None:
    plain, over = _run(), _run(over_select=1.5)
    assert all(r.num_clients == 6 for r in over.rounds)  # ceil(4 × 1.5)
    for r in over.rounds:
        late = [c for c in over.clients if c.round == r.round and c.late]
        assert r.late_clients == len(late) and r.replies >= 4 and r.replies + len(late) == 6
        assert r.wasted_bytes_up == pytest.approx(sum(c.bytes_up for c in late))
    assert sum(r.late_clients for r in over.rounds) > 0
    # the slow mobile clients are the late ones: the rounds are no longer held by them
    assert all(c.profile == "mobile-4g" for c in over.clients if c.late)
    assert sum(r.round_time_s for r in over.rounds) < sum(r.round_time_s for r in plain.rounds)


def test_a_deadline_cuts_the_slow_uploads_that_the_superlink_does_not_know_yet() -> None:
    plain, timed = _run(), _run(deadline_s=20.0)
    assert sum(r.late_clients for r in timed.rounds) > 0
    assert all(c.profile == "mobile-4g" for c in timed.clients if c.late)
    assert all(t.round_time_s < p.round_time_s for t, p in zip(timed.rounds, plain.rounds))


def test_a_deadline_before_any_reply_abandons_the_round_and_records_every_client_late() -> None:
    res = _run(deadline_s=1.0, min_replies=2)
    assert all(r.late_clients == 4 and r.replies == 0 and r.abandoned for r in res.rounds)
    assert all(c.late for c in res.clients)
    # the stage ends at the ServerApp's first poll at or after the deadline (its polls are 3 s apart)
    assert all(r.stage_times_s["fit"] < 3.5 for r in res.rounds)
    assert all(r.extra["waited_for_deadline_s"] > 0 for r in res.rounds)


@pytest.mark.parametrize("keys, expected", [
    ({"privacy": {"secagg": {"enabled": True}}}, "with SecAgg+ are not modelled yet"),
    ({"privacy": {"dp": {"enabled": True}}}, "with DP are not accounted yet"),
    ({"clients": {"total": 20, "per_round": 4, "sampling": "poisson"}}, "needs a fixed-size cohort"),
])
def test_what_does_not_run_yet_is_a_clear_error(keys: dict, expected: str) -> None:
    data = {**_cfg(over_select=1.5), **keys}
    with pytest.raises((ConfigError, ValueError), match=re.escape(expected)):
        config_from_dict(data)


def test_min_replies_above_the_cohort_is_refused() -> None:
    with pytest.raises((ConfigError, ValueError), match="cannot exceed clients.per_round"):
        config_from_dict(_cfg(min_replies=5))
