"""Flower's deployment costs: poll grids, process start, backoff, the ServerApp's polls — by hand."""

import math

import pytest

from fedbw.netmodel.flower import DeploymentClock, FlowerCosts, backoff_until, next_grid_point
from fedbw.netmodel.stage import StageMessage
from fedbw.netmodel.transfer import ClientLink

#: Costs with every CPU term at zero: only Flower's intervals and the link remain.
FREE = FlowerCosts(request_s=0.0, hop_object_s=0.0, hop_s_per_mib=0.0, clientapp_start_s=0.0,
                   clientapp_other_s=0.0, aggregate_s_per_mib=0.0, local_s_per_mib=0.0)
FAST = ClientLink(8000.0, 8000.0, 0.0)  # 1 GB/s each way, no round trip


def test_backoff_and_grid_points():
    c = FlowerCosts()
    assert backoff_until(10.0, 9.0, c) == 10.0  # already there
    assert backoff_until(10.0, 10.5, c) == 11.0  # first retry after 1 s
    assert backoff_until(10.0, 12.5, c) == 13.0  # 1 + 2
    assert backoff_until(0.0, 40.0, c) == 45.0  # 1, 2, 4, 8, 10, 10, 10 → 45
    assert next_grid_point(2.0, 3.0, 1.0) == 2.0 and next_grid_point(2.0, 3.0, 5.0) == 5.0
    assert next_grid_point(2.0, 3.0, 5.1) == 8.0


def test_one_client_idle_node_waits_half_a_poll_and_the_serverapp_its_poll():
    clock = DeploymentClock(FREE, "expected")
    st = clock.run_stage("fit", [StageMessage(0, 1000, 1000, 1, 1, compute_s=2.0)], {0: FAST})
    (m,) = st.messages
    assert m.parts["supernode_poll_s"] == pytest.approx(1.5)  # idle since it started: mean of 3 s
    # SuperExec launches 0.5 s (its mean) after "Receiving"; the reply poll (every 0.5 s from "Received")
    # then sees the reply 2.5 s after "Received" (0.5 + 2.0 compute), so no extra wait
    assert m.parts["clientapp_start_s"] == pytest.approx(0.5, abs=1e-6)
    assert m.parts["reply_pickup_s"] == pytest.approx(0.0, abs=1e-5)
    # the ServerApp pulled at push time (t=0), then polls every 3 s: the reply (sent at ≈ 4.0 s) waits to 6 s
    assert m.t_replied_s == pytest.approx(6.0, abs=1e-3)
    assert m.parts["serverapp_poll_s"] == pytest.approx(2.0, abs=1e-3)
    assert st.t_end_s == pytest.approx(6.0, abs=1e-3)


def test_the_next_round_finds_the_node_on_its_own_grid():
    """After its reply a SuperNode pulls at once, then every 3 s: the next push is found on that grid."""
    clock = DeploymentClock(FREE, "expected")
    msgs = [StageMessage(0, 1000, 1000, 1, 1, compute_s=2.0)]
    first = clock.run_stage("fit", msgs, {0: FAST})
    t_sent = first.messages[0].t_replied_s - first.messages[0].parts["serverapp_poll_s"]
    second = clock.run_stage("fit", msgs, {0: FAST})
    (m,) = second.messages
    t_pull = m.t_pushed_s + m.parts["supernode_poll_s"]
    assert t_pull == pytest.approx(t_sent + 3.0, abs=1e-6)  # the grid point 3 s after its last "Sent"
    # round period = 3 s + the node's busy time, as measured on Flower 1.42 (docs/methodology.md)
    assert second.t_end_s - first.t_end_s == pytest.approx(6.0, abs=1e-3)


def test_a_clientapp_that_starts_before_the_download_ends_backs_off():
    slow = ClientLink(8.0, 8.0, 0.0)  # 1 MB/s: a 3 MB download takes 3 s
    c = FlowerCosts(**{**FREE.__dict__, "clientapp_start_s": 0.5})
    clock = DeploymentClock(c, "expected")
    st = clock.run_stage("fit", [StageMessage(0, 3e6, 10, 1, 1)], {0: slow})
    (m,) = st.messages
    assert m.t_down_s == pytest.approx(3.0)
    # the ClientApp runs 0.5 (SuperExec) + 0.5 (start) = 1 s after "Receiving"; the objects arrive at 3 s:
    # retries at 2 s and 4 s → it has the message 1 s after "Received"
    assert m.parts["clientapp_start_s"] == pytest.approx(1.0)


def test_a_clientapp_gets_a_large_message_at_a_backoff_point_after_it_is_stored_not_object_by_object():
    """Flower 1.42's SuperNode stores a message's objects only once all are in, so a ClientApp launched
    during the download gets them at its workers' first retry after "Received", however many objects
    there are (the model laid them object by object behind the download until 2026-12-05: 2–3 s early)."""
    slow = ClientLink(8.0, 8.0, 0.0)  # 1 MB/s: a 3 MB download takes 3 s
    cpu = {**FREE.__dict__, "clientapp_start_s": 0.5}
    parts = [DeploymentClock(FlowerCosts(**cpu), "expected").run_stage(
        "fit", [StageMessage(0, 3e6, 10, k, 1)], {0: slow}).messages[0].parts["clientapp_start_s"] for k in (2, 40)]
    # running 1 s after "Receiving"; stored at 3 s: each worker's retries at 2 (± 0.2) and 4 (± 0.6) s
    assert parts[0] == pytest.approx(parts[1], abs=1e-3)
    assert 1.0 < parts[0] < 1.6  # the later of two jittered retries: past the grid point of 4 s, by < 0.6 s


def test_sampled_phases_are_reproducible_and_expected_is_their_mean():
    msgs = [StageMessage(0, 1000, 1000, 1, 1)]
    draws = []
    for seed in range(400):
        clock = DeploymentClock(FREE, "sampled", seed=seed)
        draws.append(clock.run_stage("fit", msgs, {0: FAST}).messages[0].parts["supernode_poll_s"])
    again = DeploymentClock(FREE, "sampled", seed=7).run_stage("fit", msgs, {0: FAST}).messages[0]
    assert again.parts["supernode_poll_s"] == draws[7]
    assert all(0 <= d < 3.0 for d in draws) and sum(draws) / len(draws) == pytest.approx(1.5, abs=0.15)
    with pytest.raises(ValueError):
        DeploymentClock(FREE, "random")


def test_cpu_costs_scale_with_the_device_and_pipeline_with_the_wire():
    c = FlowerCosts(**{**FREE.__dict__, "hop_s_per_mib": 0.1, "clientapp_start_s": 2.0})
    mib = 2**20
    fast_link = ClientLink(1e6, 1e6, 0.0)
    base = DeploymentClock(c).run_stage("fit", [StageMessage(0, 10 * mib, 10, 1, 1)], {0: fast_link})
    quick = DeploymentClock(c).run_stage("fit", [StageMessage(0, 10 * mib, 10, 1, 1)], {0: fast_link},
                                         client_cpu={0: 2.0})
    assert base.messages[0].t_down_s == pytest.approx(1.0, rel=1e-3)  # CPU-bound: 10 MiB × 0.1 s
    assert quick.messages[0].t_down_s == pytest.approx(0.5, rel=1e-3)  # twice the CPU, half the time
    assert quick.messages[0].parts["clientapp_start_s"] < base.messages[0].parts["clientapp_start_s"]
    # on a slow link the wire, not the CPU, bounds the transfer: one object's CPU runs while another's bytes
    # travel, so only the first object's CPU (1/8 of it: 8 arrays) comes before the wire
    slow_link = ClientLink(8.0, 8.0, 0.0)
    slow = DeploymentClock(c).run_stage("fit", [StageMessage(0, 10 * mib, 10, 20, 1)], {0: slow_link})
    wire = 10 * mib / 1e6
    assert wire + 0.1 < slow.messages[0].t_down_s < wire + 0.2
    # one array of 10 MiB is two 5 MiB chunks: the first one's CPU, then bytes (the second's CPU beneath)
    one = DeploymentClock(c).run_stage("fit", [StageMessage(0, 10 * mib, 10, 1, 1)], {0: slow_link})
    assert one.messages[0].t_down_s == pytest.approx(wire + 0.5)


def test_request_round_trips_count_per_object_pair():
    c = FREE
    link = ClientLink(math.inf, math.inf, 0.1)  # only the round trips cost time
    st = DeploymentClock(c).run_stage("fit", [StageMessage(0, 100, 100, 10, 6)], {0: link})
    (m,) = st.messages
    assert m.t_down_s == pytest.approx(0.1 * (2 + 5))  # metadata + 10 objects two at a time + confirm
    assert m.t_up_s == pytest.approx(0.1 * (1 + 3))  # metadata + 6 objects two at a time


def test_a_pull_behind_an_upload_retries_object_by_object():
    """Each object's own backoff (from its first try) — not one 1, 2, 4, 8 s chain for the message."""
    from fedbw.netmodel.flower import pull_behind

    c = FlowerCosts(object_workers=2)
    # 10 objects arriving every second from t=0 to t=10; the pull starts at t=0.5
    done = pull_behind(0.5, 0.0, 10.0, 10, c)
    one_chain = backoff_until(0.5, 10.0, c)  # 1.5, 3.5, 7.5, 15.5
    assert done < one_chain and done == pytest.approx(11.5, abs=0.6)
    assert pull_behind(12.0, 0.0, 10.0, 10, c) == 12.0  # everything already there
    # one object: exactly Flower's single backoff chain
    assert pull_behind(1.0, 0.0, 3.0, 1, c) == backoff_until(1.0, 3.0, c)


def test_averaged_lanes_are_the_mean_round_over_the_unknown_phase():
    """Lane q puts the idle node's grid and the SuperExec's poll at the phase u = (q + ½)/8 of their
    intervals; the stage is the lanes' mean. By hand, with every CPU cost zero and 2 s of training: the node
    pulls at 3u, the ClientApp runs u later, the reply poll (every 0.5 s from "Received") sends at
    3u + ⌈(u + 2)/0.5⌉·0.5, and the ServerApp, polling at 0, 3, 6 s, has it at the next multiple of 3."""
    msgs = [StageMessage(0, 1000, 1000, 1, 1, compute_s=2.0)]
    ends = []
    for q in range(8):
        u = (q + 0.5) / 8
        sending = 3 * u + math.ceil((u + 2.0) / 0.5) * 0.5
        ends.append(3.0 * math.ceil(sending / 3.0))
    assert ends == [3.0] + [6.0] * 7  # the first lane's reply makes the 3 s poll
    st = DeploymentClock(FREE, "averaged").run_stage("fit", msgs, {0: FAST})
    assert st.t_end_s == pytest.approx(sum(ends) / 8, abs=1e-3)  # 5.625 s
    # laid out at the mean phase instead, the reply misses the 3 s poll: one possible round, not the mean
    assert DeploymentClock(FREE, "expected").run_stage("fit", msgs, {0: FAST}).t_end_s == pytest.approx(6.0, abs=1e-3)
    (m,) = st.messages  # every part is the lanes' mean, so the parts still add up to the stage
    assert m.parts["supernode_poll_s"] == pytest.approx(1.5)
    total = m.t_down_s + m.t_compute_s + m.t_up_s + sum(m.parts.values())
    assert total == pytest.approx(st.t_end_s - m.t_pushed_s, abs=1e-6)


def test_each_lane_carries_its_own_poll_grids_to_the_next_stage():
    """The next stage of the averaged clock is the mean of each lane's own next stage — not a stage laid
    out from the mean times (a lane whose reply made the early poll is pushed 3 s earlier and its node's
    grid, anchored at its own last reply, moves with it)."""
    msgs = [StageMessage(0, 1000, 1000, 1, 1, compute_s=2.0)]
    averaged = DeploymentClock(FREE, "averaged")
    lanes = [DeploymentClock(FREE, "averaged", lanes=1) for _ in range(8)]
    for q, lane in enumerate(lanes):  # one clock per phase, by hand
        lane.lanes[0].u = (q + 0.5) / 8
    for _ in range(3):
        st = averaged.run_stage("fit", msgs, {0: FAST})
        ends = [lane.run_stage("fit", msgs, {0: FAST}).t_end_s for lane in lanes]
        assert st.t_end_s == pytest.approx(sum(ends) / 8, abs=1e-9)
    with pytest.raises(ValueError):
        DeploymentClock(FREE, "averaged", lanes=0)


def test_averaged_clients_alike_stay_one_class():
    msgs = [StageMessage(cid, 1000, 1000, 1, 1, compute_s=2.0) for cid in range(5)]
    clock = DeploymentClock(FREE, "averaged")
    for _ in range(2):
        st = clock.run_stage("fit", msgs, {cid: FAST for cid in range(5)})
        assert len(st.classes) == 1 and st.class_of == [0] * 5


def test_a_class_of_clients_alike_waits_for_its_slowest_member():
    """Each client draws its own unknown phases and the stage waits for the slowest: a class of n clients
    alike is laid out with the largest of n uniform phases — at its mean n/(n + 1) of the interval
    ("expected"), at the quantile u^(1/n) in lane u ("averaged")."""
    msgs = [StageMessage(cid, 1000, 1000, 1, 1, compute_s=2.0) for cid in range(5)]
    links = {cid: FAST for cid in range(5)}
    (m, *_) = DeploymentClock(FREE, "expected").run_stage("fit", msgs, links).messages
    assert m.parts["supernode_poll_s"] == pytest.approx(3.0 * 5 / 6)  # idle nodes: the last of 5 pulls
    assert m.parts["clientapp_start_s"] == pytest.approx(5 / 6, abs=1e-5)  # the last of 5 SuperExec polls
    (a, *_) = DeploymentClock(FREE, "averaged").run_stage("fit", msgs, links).messages
    lanes = [((q + 0.5) / 8) ** (1 / 5) for q in range(8)]
    assert a.parts["supernode_poll_s"] == pytest.approx(3.0 * sum(lanes) / 8)
    assert a.parts["clientapp_start_s"] == pytest.approx(sum(lanes) / 8, abs=1e-5)
    # one client alone: the mean phase, as before
    (one,) = DeploymentClock(FREE, "expected").run_stage("fit", msgs[:1], {0: FAST}).messages
    assert one.parts["supernode_poll_s"] == pytest.approx(1.5)


def test_the_supernode_sends_before_the_objects_are_stored_and_waits_for_them():
    """The ClientApp pushes the message before its objects: the SuperNode's 0.5 s reply poll finds it
    while the objects are still being handed over, and its sender, a round trip later, sleeps 0.5 s at a
    time until they are stored. By hand, from "Received" (RTT 0.1 s, nothing else costs but the
    hand-over): the SuperExec's expected poll wait puts the app's start at 0.2 s, training ends at 1.1 s,
    the reply poll at 1.5 s sends (pickup 0.4 s; a SuperNode waiting for the stored objects would poll at
    2.0 s), the send returns at 1.6 s, the 10 MiB hand-over at 0.08 s/MiB ends at 1.9 s, so the sender's
    retry at 2.1 s sends the one object, done a round trip later at 2.2 s: t_up = 0.7 s."""
    mib = 2**20
    link = ClientLink(math.inf, math.inf, 0.1)
    msg = [StageMessage(0, 10, 10 * mib, 1, 1, compute_s=0.9)]
    st = DeploymentClock(FlowerCosts(**{**FREE.__dict__, "local_s_per_mib": 0.08})).run_stage("fit", msg, {0: link})
    (m,) = st.messages
    assert m.parts["clientapp_start_s"] == pytest.approx(0.2, abs=1e-4)
    assert m.parts["reply_pickup_s"] == pytest.approx(0.4, abs=1e-4)
    assert m.t_up_s == pytest.approx(0.7, abs=1e-4)
    # a hand-over done before the send returns costs no wait: the send, the object
    quick = DeploymentClock(FlowerCosts(**{**FREE.__dict__, "local_s_per_mib": 0.001})).run_stage("fit", msg, {0: link})
    assert quick.messages[0].t_up_s == pytest.approx(0.2, abs=1e-4)
