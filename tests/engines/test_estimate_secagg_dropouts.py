"""SecAgg+ dropouts in the estimate engine (issue 34.1): clients that drop after the share exchange make the
server wait for Flower to report them gone (its heartbeat, or the stage's timeout), cost the unmasking their
reconstruction, and put the round's completion at risk."""

from __future__ import annotations

import pytest

from fedbw.config import config_from_dict
from fedbw.engines.estimate import estimate_round, secagg_completes
from fedbw.errors import ConfigError
from fedbw.flower_protocol import HEARTBEAT_INTERVAL_S, HEARTBEAT_PATIENCE
from fedbw.plan import build_plan


def _plan(dropout: float, timeout_s: float | None = None, shares: int | str = 3, engine: str = "estimate"):
    sa = {"enabled": True, "num_shares": shares, "reconstruction_threshold": 2, "dropout": dropout}
    if timeout_s is not None:
        sa["timeout_s"] = timeout_s
    return build_plan(config_from_dict({
        "engine": engine, "seed": 1, "model": {"name": "small-cnn"}, "output_dir": "/tmp/fedbw-test-drop",
        "clients": {"total": 100, "per_round": 20, "compute": "synthetic"}, "training": {"rounds": 2},
        "network": {"profile": "home-30"}, "privacy": {"secagg": sa}}))


def _round(plan, r: int = 1):
    clock = plan.deployment_clock()
    out = None
    for i in range(1, r + 1):
        out = estimate_round(plan, i, clock=clock)
    return out


def test_the_dropped_are_a_seeded_share_of_each_cohort() -> None:
    plan = _plan(0.1)
    assert len(plan.secagg_dropped(1)) == 2 and set(plan.secagg_dropped(1)) <= set(plan.sampled_clients(1))
    assert plan.secagg_dropped(1) == _plan(0.1).secagg_dropped(1) and _plan(0.0).secagg_dropped(1) == []


def test_the_masked_vector_stage_waits_for_flower_to_report_the_dropped_gone() -> None:
    plain, dropped, bounded = _round(_plan(0.0)), _round(_plan(0.1)), _round(_plan(0.1, timeout_s=10.0))
    stage = "collect_masked_vectors"
    wait = dropped.stage_spans_s[stage] - plain.stage_spans_s[stage]
    # gone (patience − 1) to patience heartbeat intervals after they dropped: 30–60 s
    assert (HEARTBEAT_PATIENCE - 1) * HEARTBEAT_INTERVAL_S - 6 < wait < HEARTBEAT_PATIENCE * HEARTBEAT_INTERVAL_S
    assert 10.0 <= bounded.stage_spans_s[stage] < 10.0 + 2 * 3.5  # the first ServerApp poll after the timeout
    # the dropped clients send no masked vector and get no unmask request
    gone = set(_plan(0.1).secagg_dropped(1))
    assert not [t for t in dropped.timings if t.client_id in gone and t.stage in (stage, "unmask")]


def test_the_unmasking_pays_for_each_dropped_client_and_the_record_says_how_likely_the_round_completes() -> None:
    plain, dropped = _round(_plan(0.0)), _round(_plan(0.1))
    assert dropped.server_s["extra_s"] > plain.server_s["extra_s"]
    lost = len(_plan(0.1).secagg_dropped(1))
    assert secagg_completes(_plan(0.1), 1, lost) < secagg_completes(_plan(0.1, shares="log2"), 1, lost) <= 1.0


@pytest.mark.parametrize("change, says", [({"enabled": False}, "needs SecAgg+"),
                                          ({"engine": "simulate"}, "estimate engine only")])
def test_dropouts_where_they_are_not_modelled_are_refused(change: dict, says: str) -> None:
    sa = {"enabled": True, "num_shares": 3, "reconstruction_threshold": 2, "dropout": 0.1}
    cfg = {"engine": "estimate", "model": {"name": "small-cnn"}, "clients": {"total": 10, "per_round": 5,
           "compute": "synthetic"}, "privacy": {"secagg": sa}}
    if "engine" in change:
        cfg["engine"] = change["engine"]
    else:
        sa.update(change)
    with pytest.raises(ConfigError, match=says):
        config_from_dict(cfg)
