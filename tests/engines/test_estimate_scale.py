"""estimate with many clients: rounds worked out by hand at 1,000 clients, and records built without a
second validation that are exactly what validation makes (and write the same JSON)."""

from dataclasses import asdict

import pytest
from pydantic import TypeAdapter

from fedbw.config import config_from_dict
from fedbw.engines.estimate import run_estimate
from fedbw.netmodel.flower import MIB
from fedbw.netmodel.transfer import mbps_to_bytes_per_s
from fedbw.plan import build_plan
from fedbw.results.records import ClientRoundRecord, StageRecord


def _config(n: int, **extra: object):
    return config_from_dict({
        "engine": "estimate", "seed": 1, "model": {"name": "mlp"}, "data": {"dataset": "digits"},
        "clients": {"total": 2 * n, "per_round": n, "compute": "synthetic"}, "training": {"rounds": 2},
        "network": {"profile": "home-80"}, **extra})


def test_a_thousand_clients_split_the_server_link_by_hand():
    """Links only: 1,000 identical downloads share the server's uplink equally, then 1,000 uploads its
    downlink (each client's own link is 20× faster than its share)."""
    plan = build_plan(_config(1000, framework="none", server={"link": "server-1g"}))
    (ex,) = plan.predicted_exchanges(1)
    share_down = mbps_to_bytes_per_s(plan.server.up_payload_mbps) / 1000
    share_up = mbps_to_bytes_per_s(plan.server.down_payload_mbps) / 1000
    one_way = plan.clients[0].link.one_way_s
    t_down, t_up = one_way + ex.bytes_down / share_down, one_way + ex.bytes_up / share_up
    compute = plan.clients[0].est_compute_s
    result = run_estimate(plan, "t")
    first = [c for c in result.clients if c.round == 1]
    assert len(first) == 1000 and {c.client_id for c in first} == set(plan.sampled_clients(1))
    for c in first:
        assert c.t_down_s == pytest.approx(t_down, rel=1e-9) and c.t_up_s == pytest.approx(t_up, rel=1e-9)
    r1 = result.rounds[0]
    assert r1.round_time_s == pytest.approx(t_down + compute + t_up, rel=1e-9)
    assert r1.bytes_down_total == 1000 * ex.bytes_down and r1.bytes_up_total == 1000 * ex.bytes_up
    assert r1.extra["server_link_s"] == pytest.approx(t_down + t_up - 2 * one_way
                                                      - ex.bytes_down / plan.clients[0].link.down_bytes_per_s
                                                      - ex.bytes_up / plan.clients[0].link.up_bytes_per_s, rel=1e-9)


def test_a_thousand_identical_deployment_clients_differ_only_in_the_serverapp_pull_order():
    """A Flower deployment, server link unlimited: every client's link, compute and Flower parts are the
    same; the ServerApp pulls their replies one after another, each pull a hop over loopback (one request
    per object and its bytes: the hop term), so the replies' pickup waits climb by exactly that step and the
    barrier is the last one pulled."""
    plan = build_plan(_config(1000, server={"link": "none"}))
    (ex,) = plan.predicted_exchanges(1)
    step = plan.costs.hop_object_s * ex.objects_up + plan.costs.hop_s_per_mib * ex.bytes_up / MIB
    result = run_estimate(plan, "t")
    first = [c.stages[0] for c in result.clients if c.round == 1]
    assert len({(s.t_down_s, s.t_up_s, s.t_compute_s) for s in first}) == 1
    frameworks = sorted(s.t_framework_s for s in first)
    gaps = [b - a for a, b in zip(frameworks, frameworks[1:])]
    # replies pulled in one poll are a step apart; a poll boundary adds the ServerApp's poll interval
    in_one_poll = [g for g in gaps if g < plan.costs.serverapp_poll_s / 2]
    assert len(in_one_poll) >= 990 and all(g == pytest.approx(step, rel=1e-6) for g in in_one_poll)
    r1 = result.rounds[0]
    assert r1.round_time_s >= frameworks[-1] + first[0].t_down_s + first[0].t_up_s + first[0].t_compute_s


@pytest.mark.parametrize("extra", [
    {},
    {"privacy": {"secagg": {"enabled": True, "mode": "stock", "num_shares": 3}}},
    {"privacy": {"dp": {"enabled": True, "mode": "local", "local_epsilon": 0.5}}, "compression": {"codec": "int8"}},
    {"framework": "none", "server": {"link": "server-1g"}},
])
def test_records_built_without_validation_are_what_validation_makes(extra):
    result = run_estimate(build_plan(_config(20, **extra)), "t")
    adapter = TypeAdapter(ClientRoundRecord)
    for rec in result.clients:
        data = {k: v for k, v in rec.to_json().items() if k not in ClientRoundRecord.DERIVED}
        again = adapter.validate_python(data)
        assert again == rec and again.to_json() == rec.to_json()
        # to_json builds field by field: the same as dataclasses.asdict plus the derived sums
        assert rec.to_json() == {**asdict(again), **{k: getattr(again, k) for k in ClientRoundRecord.DERIVED}}
        assert all(type(s) is StageRecord and isinstance(s.bytes_down, float) for s in rec.stages)


def test_a_run_writes_and_reads_back_the_same_records(tmp_path):
    """Written lines read back (validated) as the records the run returned; an infinite time (a link that is
    down) still goes through as the string "inf"."""
    import math

    from fedbw.results.records import RecordWriter, engine_client_records, load_records

    result = run_estimate(build_plan(_config(50, framework="none")), "t")
    [down] = engine_client_records("t", "estimate", 1, [(999, "fit", 10, 10, 1.0, 0.0, math.inf, 0.0)],
                                   lambda cid: "home-80")
    with RecordWriter(tmp_path / "records.jsonl", run_id="t", engine="estimate") as writer:
        writer.write([*result.clients, down])
        writer.write(result.rounds)
    assert '"t_up_s": "inf"' in (tmp_path / "records.jsonl").read_text().splitlines()[-len(result.rounds) - 1]
    clients, rounds = load_records(tmp_path)
    assert [c.to_json() for c in clients[:-1]] == [c.to_json() for c in result.clients]
    assert clients[-1].t_up_s == math.inf
    assert [r.round_time_s for r in rounds] == [r.round_time_s for r in result.rounds]
