"""Clients that come and go (issue 32.1's availability): the plan samples each round from the clients on line
at its start on the model's clock, and a client whose on-line time ends before its training reply drops out,
in every engine the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fedbw.config import config_from_dict
from fedbw.engines.cohorts import planned
from fedbw.engines.estimate import run_estimate
from fedbw.errors import ConfigError
from fedbw.plan import Plan


def _cfg(tmp_path: Path, intervals: str, **sections: Any) -> Any:
    """4 clients, 3 per round, synthetic compute, on the intervals given (``client,start_s,end_s`` lines)."""
    on = tmp_path / "on.csv"
    on.write_text("client,start_s,end_s\n" + intervals)
    data: dict[str, Any] = {"engine": "estimate", "model": {"name": "small-cnn"},
                            "clients": {"total": 4, "per_round": 3, "compute": "synthetic",
                                        "availability": {"file": str(on)}},
                            "training": {"rounds": 2}}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    return config_from_dict(data)


#: clients 0 and 2 on line throughout; 1 leaves 3 s into round 1 (before its fit reply, ~6 s in); 3 comes
#: on line long after both rounds
MID_ROUND_LEAVER = "0,0,10000\n1,0,3\n2,0,10000\n3,5000,10000\n"


def test_a_round_samples_only_the_clients_on_line_at_its_start(tmp_path: Path) -> None:
    plan = planned(_cfg(tmp_path, MID_ROUND_LEAVER))
    assert plan.sampled_clients(1) == [0, 1, 2]  # client 3 is off line: only 3 to sample 3 from
    assert plan.sampled_clients(2) == [0, 2]  # client 1 has gone: a smaller cohort, not an off-line client
    assert plan.online == [3, 2] and plan.round_starts_s is not None and plan.round_starts_s[0] == 0.0
    assert plan.offline == [[1], []]


def test_a_client_that_goes_off_line_mid_round_drops_and_the_server_waits_for_its_heartbeat(tmp_path: Path) -> None:
    plan = planned(_cfg(tmp_path, MID_ROUND_LEAVER))
    result = run_estimate(plan, "t")
    r1, r2 = result.rounds
    assert r1.dropped_clients == 1 and r1.replies == 2 and r1.extra["dropped"] == [1]
    gone = [c for c in result.clients if c.round == 1 and c.dropped]
    assert [c.client_id for c in gone] == [1] and gone[0].stages == []  # it never replied to fit
    # Flower reports it gone ≥ (patience − 1) heartbeat intervals after it dropped: the round waits that long
    assert r1.round_time_s > 30.0 > 3 * r2.round_time_s
    assert r2.dropped_clients == 0 and r2.num_clients == 2
    # round 2 starts when round 1 ends on the model's clock
    assert plan.round_starts_s == pytest.approx([0.0, r1.round_time_s])
    assert r2.extra["online_clients"] == 2 and r2.extra["availability_start_s"] == pytest.approx(r1.round_time_s)


def test_a_deadline_closes_the_round_instead_of_waiting_for_the_dropped_client(tmp_path: Path) -> None:
    plan = planned(_cfg(tmp_path, MID_ROUND_LEAVER, round={"deadline_s": 12.0}))
    r1 = run_estimate(plan, "t").rounds[0]
    assert r1.dropped_clients == 1 and 12.0 <= r1.round_time_s < 20.0


def test_without_availability_the_plan_is_untouched(tmp_path: Path) -> None:
    cfg = config_from_dict({"engine": "estimate", "clients": {"total": 6, "per_round": 3}})
    plan = planned(cfg)
    assert plan.offline is None and plan.online is None and plan.dropped(1) == []


def test_a_generated_availability_is_seeded_and_its_cohorts_are_on_line(tmp_path: Path) -> None:
    cfg = config_from_dict({"engine": "estimate", "clients": {
        "total": 40, "per_round": 8, "compute": "synthetic",
        "availability": {"generate": "two-state", "mean_on_s": 120, "mean_off_s": 240}}, "training": {"rounds": 4}})
    a, b = planned(cfg), planned(cfg)
    assert a.samples == b.samples and a.offline == b.offline
    availability = cfg.clients.availability.load(40, cfg.seed)
    assert a.round_starts_s is not None
    for r, t in enumerate(a.round_starts_s, start=1):
        assert all(availability.is_online(c, t) for c in a.sampled_clients(r))
        assert len(a.sampled_clients(r)) == min(8, len(availability.online_clients(t)))


def test_the_plan_file_carries_who_was_on_line_and_who_dropped(tmp_path: Path) -> None:
    plan = planned(_cfg(tmp_path, MID_ROUND_LEAVER))
    back = Plan.from_json(plan.to_json())
    assert (back.samples, back.offline, back.online, back.round_starts_s) == (
        plan.samples, plan.offline, plan.online, plan.round_starts_s)
    assert back.dropped(1) == [1]


def test_emulate_stops_a_dropped_client_at_its_training_stage(tmp_path: Path) -> None:
    from fedbw.engines.emulate.clients import drops_for_plan

    plain = planned(_cfg(tmp_path, MID_ROUND_LEAVER).model_copy(update={"engine": "emulate"}))
    assert [(d.client, d.round, d.stage_index) for d in drops_for_plan(plain)] == [(1, 1, 0)]
    secagg = planned(_cfg(tmp_path, MID_ROUND_LEAVER, privacy={"secagg": {"enabled": True}}))
    assert [(d.client, d.round, d.stage_index) for d in drops_for_plan(secagg)] == [(1, 1, 2)]


#: client 1 leaves 3 s into round 1 and is back on line for round 2
LEAVES_AND_COMES_BACK = "0,0,10000\n1,0,3\n1,40,10000\n2,0,10000\n"


def test_a_dropped_client_sampled_again_comes_back_in_emulate_except_with_supernode_auth(tmp_path: Path) -> None:
    """emulate stops a dropped client's SuperNode and, when the plan samples it again, starts a fresh one (a new
    node id); an authenticated SuperNode keeps its key's node id, so that is refused in one line."""
    from fedbw.engines.emulate.clients import drops_for_plan

    for engine in ("estimate", "simulate", "emulate"):
        assert planned(_cfg(tmp_path, LEAVES_AND_COMES_BACK).model_copy(update={"engine": engine})).offline == [[1], []]
    back = planned(_cfg(tmp_path, LEAVES_AND_COMES_BACK).model_copy(update={"engine": "emulate"}))
    assert [(d.client, d.round, d.back) for d in drops_for_plan(back)] == [(1, 1, True)]
    gone = planned(_cfg(tmp_path, MID_ROUND_LEAVER).model_copy(update={"engine": "emulate"}))
    assert [(d.client, d.round, d.back) for d in drops_for_plan(gone)] == [(1, 1, False)]  # never sampled again
    auth = _cfg(tmp_path, LEAVES_AND_COMES_BACK, emulate={"tls": True, "supernode_auth": True})
    with pytest.raises(ConfigError, match="client 1 goes off line in round 1 and is sampled again in round 2"):
        planned(auth.model_copy(update={"engine": "emulate"}))


@pytest.mark.parametrize("change, says", [
    ({"clients": {"sampling": "poisson"}}, "fixed-size cohort"),
    ({"framework": "none"}, "deployment clock"),
    ({"clients": {"availability": {"generate": "two-state", "file": "x.csv"}}}, "one of them"),
    ({"clients": {"availability": {}}}, "one of them"),
])
def test_an_availability_that_cannot_be_planned_is_refused_with_its_reason(change: dict[str, Any], says: str) -> None:
    data: dict[str, Any] = {"engine": "estimate", "clients": {"total": 6, "per_round": 3,
                                                              "availability": {"generate": "two-state"}}}
    for key, value in change.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and key in data else value
    with pytest.raises(Exception, match=says):
        config_from_dict(data)


def test_a_file_that_names_a_client_outside_the_federation_or_ends_too_soon_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="names client 7"):
        planned(_cfg(tmp_path, "0,0,100\n7,0,100\n"))
    late = _cfg(tmp_path, "0,0,100\n1,0,100\n2,0,100\n")
    late.clients.availability.start_s = 150.0  # round 1 would start after the trace ends
    with pytest.raises(ConfigError, match="round 1 would start at 150 s, after the trace ends"):
        planned(late)
    # everyone leaves 3 s into round 1: no reply to time the round by
    with pytest.raises(ConfigError, match="every client sampled in round 1 goes off line"):
        planned(_cfg(tmp_path, "0,0,3\n1,0,3\n2,0,3\n"))


def test_the_cli_refuses_what_an_engine_cannot_run_with_one_line_and_exit_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from fedbw.cli import app

    on = tmp_path / "on.csv"
    on.write_text("client,start_s,end_s\n" + LEAVES_AND_COMES_BACK)
    out = CliRunner().invoke(app, ["run", "experiments/quickstart.toml", "--engine", "emulate", "--set",
                                   "clients.total=4", "--set", "clients.per_round=3", "--set",
                                   'clients.compute="synthetic"', "--set", f'clients.availability.file="{on}"',
                                   "--set", "emulate.tls=true", "--set", "emulate.supernode_auth=true",
                                   "--set", f'output_dir="{tmp_path}"'])
    assert out.exit_code == 2 and "Traceback" not in out.output, out.output
    assert "sampled again in round 2" in out.output
    assert not list(tmp_path.glob("quickstart-*"))  # refused before any run directory exists


def test_over_selection_closes_on_enough_replies_without_waiting_for_the_dropped_client(tmp_path: Path) -> None:
    """With over-selection the server stops once enough replies are in: a client that dropped does not hold
    the round for its heartbeat (only waiting for every reply does)."""
    wait = run_estimate(planned(_cfg(tmp_path, MID_ROUND_LEAVER)), "t").rounds[0]
    enough = run_estimate(planned(_cfg(tmp_path, MID_ROUND_LEAVER, clients={"per_round": 2},
                                       round={"over_select": 1.5})), "t").rounds[0]
    assert enough.num_clients == 3 and enough.dropped_clients == 1
    assert enough.round_time_s < 20.0 < 30.0 < wait.round_time_s


def test_dp_with_availability_is_accounted_without_amplification_by_sampling(tmp_path: Path) -> None:
    """A cohort drawn from the clients on line is not a uniform sample: each round is accounted as its Gaussian
    release (replace-one), the ε a uniform fixed-size sample would have earned is not claimed."""
    from dp_accounting import dp_event

    from fedbw.privacy.sampling import FixedSizeSampler, OnLineSampler

    dp = {"privacy": {"dp": {"enabled": True, "noise_multiplier": 1.0}}}
    everyone = "".join(f"{c},0,10000\n" for c in range(20))  # a small sampling fraction: amplification matters
    on_line = _cfg(tmp_path, everyone, **dp, clients={"total": 20})
    sampler = on_line.sampler()
    assert type(sampler) is OnLineSampler and sampler.adjacency == "replace-one"
    gaussian = dp_event.GaussianDpEvent(0.5)
    assert sampler.dp_event(gaussian, 3) == gaussian and isinstance(sampler.dp_event(gaussian, 0),
                                                                    dp_event.NoOpDpEvent)
    uniform = config_from_dict({**on_line.model_dump(), "clients": {**on_line.clients.model_dump(),
                                                                    "availability": None}})
    assert type(uniform.sampler()) is FixedSizeSampler
    result = run_estimate(planned(on_line), "t")
    amplified = run_estimate(planned(uniform), "u")
    eps = [r.epsilon for r in result.rounds]
    assert all(e is not None for e in eps) and eps[1] > eps[0]
    assert eps[-1] > amplified.rounds[-1].epsilon  # no amplification claimed: a larger ε for the same noise
    assert result.rounds[0].privacy.sampling == "on-line" and result.rounds[0].privacy.adjacency == "replace-one"


def test_dp_accounts_the_cohort_left_after_a_dropout_and_caps_the_rounds_with_it(tmp_path: Path) -> None:
    """The server aggregates the clients that did not drop out: ε is accounted for that cohort (smaller, so
    a larger ε for the same noise), and privacy.dp.max_epsilon stops the run by it."""
    dp = {"enabled": True, "noise_multiplier": 1.0}
    plan = planned(_cfg(tmp_path, MID_ROUND_LEAVER, privacy={"dp": dp}))
    result = run_estimate(plan, "t")
    assert [r.privacy.cohort for r in result.rounds] == [2, 2]  # client 1 dropped in round 1; round 2 has 2
    full = planned(_cfg(tmp_path, "0,0,10000\n1,0,10000\n2,0,10000\n3,5000,10000\n", privacy={"dp": dp}))
    assert plan.epsilons[0] > full.epsilons[0]
    capped = planned(_cfg(tmp_path, MID_ROUND_LEAVER,
                          privacy={"dp": {**dp, "max_epsilon": (plan.epsilons[0] + plan.epsilons[1]) / 2}}))
    assert capped.rounds == 1 and capped.epsilons == plan.epsilons[:1] and "stopped after round 1" in capped.stop_reason
    assert len(capped.offline) == len(capped.round_starts_s) == 1
    with pytest.raises(ConfigError, match="below the ε of round 1 for the cohort the server aggregates"):
        planned(_cfg(tmp_path, MID_ROUND_LEAVER,
                     privacy={"dp": {**dp, "max_epsilon": (plan.epsilons[0] + full.epsilons[0]) / 2}}))
