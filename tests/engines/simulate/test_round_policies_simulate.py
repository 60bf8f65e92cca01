"""simulate with a round policy (issue 32.2): the ServerApp lays its round on the same virtual clock as the
engine and leaves out the replies that clock calls late, so the updates it aggregated and the clients the
records call late are the same clients."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedbw.config import config_from_dict

#: Clients 0 and 1 download at 0.5 Mbps: the small CNN's 0.55 MB take ≈ 9 s, so their replies are announced
#: long after the others' (a slow download is what a closing poll can cut; a slow upload already announced
#: is pulled behind, as in Flower).
SLOW = [{"client": 0, "down_mbps": 0.5}, {"client": 1, "down_mbps": 0.5}]


def _run(tmp_path: Path, privacy: dict | None = None, **round_keys: object):
    from fedbw.runner import run_experiment

    cfg = config_from_dict({"name": "policy", "engine": "simulate", "device": "cpu", "seed": 0,
                            "output_dir": str(tmp_path), "model": {"name": "small-cnn"},
                            "clients": {"total": 6, "per_round": 3, "compute": "synthetic"},
                            "training": {"rounds": 3}, "network": {"profile": "home-80", "overrides": SLOW},
                            "round": round_keys, "privacy": privacy or {}})
    return run_experiment(cfg)


def _late_events(run_dir: Path) -> dict[int, list[int]]:
    out = {}
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev["event"] == "late":
            out[ev["round"]] = ev["clients"]
    return out


@pytest.mark.slow
def test_the_serverapp_leaves_out_exactly_the_clients_the_records_call_late(tmp_path: Path) -> None:
    res = _run(tmp_path, over_select=2.0)  # 6 sampled, the first 3 replies close the stage
    assert all(r.num_clients == 6 for r in res.rounds)
    late_records = {r.round: sorted(c.client_id for c in res.clients if c.round == r.round and c.late)
                    for r in res.rounds}
    late_events = _late_events(res.run_dir)
    assert {r: c for r, c in late_records.items() if c} == late_events
    assert set().union(*late_events.values()) >= {0, 1}  # the slow downloads are late
    for r in res.rounds:
        assert r.replies == 6 - len(late_records[r.round]) and not r.abandoned
        assert r.wasted_bytes_up == pytest.approx(sum(c.bytes_up for c in res.clients
                                                      if c.round == r.round and c.late))


@pytest.mark.slow
def test_under_secagg_the_late_clients_are_dropouts_flowers_workflow_unmasks_without(tmp_path: Path) -> None:
    """SecAgg+ with over-selection under simulate: the ServerApp leaves the late masked vectors out, so
    Flower's workflow takes those clients for dropped after the share exchange and sends its unmask stage to
    the others only; the records call the same clients late, without an unmask stage, and every round
    aggregates the replies that came in time (its shares: the whole cohort, so the round completes)."""
    res = _run(tmp_path, privacy={"secagg": {"enabled": True, "num_shares": "all"}}, over_select=2.0)
    late_records = {r.round: sorted(c.client_id for c in res.clients if c.round == r.round and c.late)
                    for r in res.rounds}
    assert {r: c for r, c in late_records.items() if c} == _late_events(res.run_dir)
    assert set().union(*late_records.values()) >= {0, 1}
    for r in res.rounds:
        assert r.replies == 6 - len(late_records[r.round]) >= 3 and not r.abandoned
        for c in (c for c in res.clients if c.round == r.round):
            assert ("unmask" in {s.stage for s in c.stages}) == (c.client_id not in late_records[r.round])
    messages = [json.loads(line) for line in (res.run_dir / "events.jsonl").read_text().splitlines()]
    unmasked = {(e["round"], e["client_id"]) for e in messages if e["event"] == "message" and e["stage"] == "unmask"}
    assert unmasked == {(c.round, c.client_id) for c in res.clients if not c.late}


@pytest.mark.slow
def test_a_secagg_round_that_halts_is_abandoned_and_the_run_goes_on(tmp_path: Path) -> None:
    """4 sampled for 2, 3 shares: with the two slow clients late, some client keeps 1 of its 3 share holders
    wherever Flower's ring puts them, below the threshold of 2, so Flower halts the round and goes on with the
    model unchanged. So does the run: the round is recorded as abandoned, with the reason, and the next round
    runs (and halts too: the same clients are late)."""
    from fedbw.runner import run_experiment

    cfg = config_from_dict({"name": "halt", "engine": "simulate", "device": "cpu", "seed": 0,
                            "output_dir": str(tmp_path), "model": {"name": "small-cnn"},
                            "clients": {"total": 4, "per_round": 2, "compute": "synthetic"},
                            "training": {"rounds": 2}, "network": {"profile": "home-80", "overrides": SLOW},
                            "round": {"over_select": 2.0},
                            "privacy": {"secagg": {"enabled": True, "num_shares": 3}}})
    res = run_experiment(cfg)
    assert [r.round for r in res.rounds] == [1, 2]
    for r in res.rounds:
        assert r.abandoned and r.extra["secagg_halted"].startswith("SecAgg+ halted: a client kept fewer than "
                                                                  "reconstruction_threshold")
        assert r.privacy is not None and r.privacy.cohort == 0  # nothing released


@pytest.mark.slow
def test_with_dp_the_server_accounts_the_replies_it_aggregated(tmp_path: Path) -> None:
    """DP with over-selection under simulate (issue 32.2): the ServerApp's accountant steps with the replies
    its strategy aggregated (the late ones left out), without amplification; ε after each round is the
    Gaussian composition of those cohorts written out by hand (tests/engines/test_round_policies.py)."""
    from tests.engines.test_round_policies import _gaussian_epsilon

    res = _run(tmp_path, privacy={"dp": {"enabled": True, "noise_multiplier": 1.0}}, over_select=2.0)
    assert sum(r.late_clients for r in res.rounds) > 0
    assert [r.privacy.cohort for r in res.rounds] == [r.replies for r in res.rounds]
    assert all(r.privacy.sampling == "first-replies" for r in res.rounds)
    assert any(r.replies for r in res.rounds), [r.replies for r in res.rounds]
    zs = []
    for r in res.rounds:
        if r.replies:  # a round with no reply in time released nothing
            zs.append(1.0 * r.replies / (2 * 3))
        assert r.epsilon == pytest.approx(_gaussian_epsilon(zs, 1e-5), rel=1e-6)


@pytest.mark.slow
def test_a_traced_link_in_simulate_moves_the_bytes_the_estimate_engine_moves(tmp_path: Path) -> None:
    """A trace in the config reaches simulate's clock through the plan file (issue 32.1): client 0's
    downlink falls to 0.4 Mbps 6 s into the run, and simulate's records time its downloads as estimate's do
    (one model: this checks the plumbing, emulate is the independent check)."""
    from fedbw.runner import run_experiment

    trace = tmp_path / "step.csv"
    trace.write_text("t_s,up_mbps,down_mbps\n0,80,1000\n6,80,0.4\n60,80,0.4\n")
    downs = {}
    for engine in ("estimate", "simulate"):
        cfg = config_from_dict({"name": f"trace-{engine}", "engine": engine, "device": "cpu", "seed": 0,
                                "output_dir": str(tmp_path), "model": {"name": "small-cnn"},
                                "clients": {"total": 2, "per_round": 2, "compute": "synthetic"},
                                "training": {"rounds": 2},
                                "network": {"profile": "home-80", "trace_phase": "aligned",
                                            "overrides": [{"client": 0, "trace": str(trace)}]}})
        res = run_experiment(cfg)
        downs[engine] = {c.round: c.t_down_s for c in res.clients if c.client_id == 0}
    assert downs["simulate"] == pytest.approx(downs["estimate"], rel=0.02)
    assert downs["simulate"][1] < 2.0 < 8.0 < downs["simulate"][2]


@pytest.mark.slow
@pytest.mark.parametrize("privacy", ["plain", "secagg", "dp"])
def test_a_client_that_goes_off_line_mid_round_is_left_out_in_simulate_as_the_plan_says(tmp_path: Path,
                                                                                      privacy: str) -> None:
    """clients.availability under simulate (issue 32.1): Flower's Simulation Engine runs client 1 to its reply,
    but the plan has it off line 3 s into round 1, so the ServerApp leaves its update out (a ``dropped``
    event; under SecAgg+ its masked vector, and Flower's workflow then unmasks without it) and the virtual
    clock waits for Flower to report it gone; the records match estimate's (one model: the plumbing is what
    this checks)."""
    from fedbw.runner import run_experiment

    on = tmp_path / "on.csv"
    on.write_text("client,start_s,end_s\n0,0,10000\n1,0,3\n2,0,10000\n3,9000,10000\n")
    runs = {}
    for engine in ("estimate", "simulate"):
        runs[engine] = run_experiment(config_from_dict({
            "name": f"availability-{engine}", "engine": engine, "device": "cpu", "seed": 0,
            "output_dir": str(tmp_path), "model": {"name": "small-cnn"}, "network": {"profile": "home-80"},
            "clients": {"total": 4, "per_round": 3, "compute": "synthetic", "availability": {"file": str(on)}},
            "training": {"rounds": 2},
            "privacy": {"secagg": {"enabled": privacy == "secagg"},
                        "dp": {"enabled": privacy == "dp", "noise_multiplier": 1.0}}}))
    sim, est = runs["simulate"], runs["estimate"]
    events = [json.loads(line) for line in (sim.run_dir / "events.jsonl").read_text().splitlines()]
    assert [(e["round"], e["clients"]) for e in events if e["event"] == "dropped"] == [(1, [1])]
    for res in (sim, est):
        assert [sorted(c.client_id for c in res.clients if c.round == r) for r in (1, 2)] == [[0, 1, 2], [0, 2]]
        assert [c.client_id for c in res.clients if c.dropped] == [1]
        assert [r.replies for r in res.rounds] == [2, 2]
    assert sim.rounds[0].round_time_s > 30.0 and sim.rounds[0].round_time_s == pytest.approx(
        est.rounds[0].round_time_s, rel=0.05)
    if privacy == "dp":  # ε of the cohort aggregated (2 in round 1), without amplification, the same in both
        assert [r.privacy.cohort for r in sim.rounds] == [2, 2] and sim.rounds[0].privacy.sampling == "on-line"
        assert [r.epsilon for r in sim.rounds] == pytest.approx([r.epsilon for r in est.rounds])
