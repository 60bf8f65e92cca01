"""Many clients on one link model: identical clients are laid out once (classes), and what still differs
between them — the ServerApp pulling their replies one after another, their share of the server link —
comes out as worked out by hand."""

import math

import pytest

from fedbw.netmodel.flower import DeploymentClock, FlowerCosts
from fedbw.netmodel.stage import StageMessage
from fedbw.netmodel.sharing import Flow, finish_times, water_fill
from fedbw.netmodel.transfer import ClientLink

MIB = 2**20
#: Every CPU cost zero but moving bytes: 0.1 s per MiB between local processes and over a hop, so the
#: ClientApp's hand-back of a 1 MiB reply, its upload's CPU and the ServerApp's pull of it (a hop over
#: loopback, one request per object) take 0.1 s each, and the round's arithmetic stays checkable by hand.
LOCAL_ONLY = FlowerCosts(request_s=0.0, hop_object_s=0.0, hop_s_per_mib=0.1,
                         clientapp_start_s=0.0, clientapp_other_s=0.0, 
                         aggregate_s_per_mib=0.0, local_s_per_mib=0.1)
FAST = ClientLink(8000.0, 8000.0, 0.0)  # 1 GB/s each way, no round trip
SLOW = ClientLink(80.0, 80.0, 0.0)  # 10 MB/s


def test_counted_flows_share_like_the_flows_they_stand_for():
    # capacity 11 over 2 flows capped at 1 and 3 capped at 10: the small ones keep 1, the rest split 9 → 3 each
    assert water_fill([1, 10], 11, counts=[2, 3]) == pytest.approx([1.0, 3.0])
    assert water_fill([1, 1, 10, 10, 10], 11) == pytest.approx([1, 1, 3, 3, 3])
    # 4 flows of 10 B at cap 10 B/s on 20 B/s: 5 B/s each → 2 s, counted or listed
    assert finish_times([Flow(0.0, 10, 10)], 20, counts=[4]) == pytest.approx([2.0])
    assert finish_times([Flow(0.0, 10, 10)] * 4, 20) == pytest.approx([2.0] * 4)
    # two counted classes, one starting later: 0–1 s: 2 flows of class A alone at 5 B/s each (cap 5);
    # from 1 s 3 more flows (class B) join: 10 B/s over 5 flows → 2 B/s each
    ends = finish_times([Flow(0.0, 9, 5), Flow(1.0, 4, 5)], 10, counts=[2, 3])
    # A has 4 B left at t=1 → at 2 B/s done at 3 s; B has 4 B at 2 B/s → done at 3 s as well
    assert ends == pytest.approx([3.0, 3.0])


def test_a_hundred_thousand_downloads_behind_ten_gigabit():
    """100,000 clients × 1 MB on 10 MB/s links behind 10 Gbit/s: the server link gives each 12.5 kB/s."""
    flows = [Flow(0.0, 1e6, 1e7)] * 100_000
    ends = finish_times(flows, 1.25e9)
    assert len(ends) == 100_000 and ends[0] == ends[-1] == pytest.approx(1e6 / (1.25e9 / 100_000))


def _stage(clock: DeploymentClock, n: int, server_down: float = math.inf, link: ClientLink = FAST):
    # 2.05 s of training: a ClientApp that ends between the reply poll's 0.5 s steps, in a lane of one
    # client as in a lane of three (at 2.0 s a lone client ends within a microsecond of a step)
    msgs = [StageMessage(cid, 1000, MIB, 1, 1, compute_s=2.05) for cid in range(n)]
    return clock.run_stage("fit", msgs, {cid: link for cid in range(n)}, server_down_bytes_per_s=server_down)


def test_identical_clients_are_one_class_and_the_serverapp_pulls_them_in_turn():
    clock = DeploymentClock(LOCAL_ONLY, "expected")
    st = _stage(clock, 3)
    assert len(st.classes) == 1 and st.class_of == [0, 0, 0]
    # by hand: the class is laid out as its slowest member, whose unknown phases are the largest of 3 uniform
    # ones, ¾ of each interval at their mean: the idle nodes pull at 2.25 s (¾ of 3 s); the ClientApp runs
    # 0.75 s later (SuperExec), trains 2.05 s, hands back its 1 MiB reply (0.1 s) at ≈ 5.15 s; the reply poll
    # (every 0.5 s from "Received" at 2.25 s) sends at 5.25 s; uploads take 0.1 s of CPU and 1 ms of link.
    # The ServerApp polled at 0, 3 and 6 s: at 6 s it pulls the three replies one after another, 0.1 s each
    # (1 MiB × 0.1 s/MiB over the loopback hop)
    replied = [m.t_replied_s for m in st.messages]
    assert replied == pytest.approx([6.1, 6.2, 6.3], abs=2e-3)
    polls = [m.parts["serverapp_poll_s"] for m in st.messages]
    assert polls == pytest.approx([6.1 - 5.351, 6.2 - 5.351, 6.3 - 5.351], abs=2e-3)
    assert st.messages[0].parts["supernode_poll_s"] == pytest.approx(2.25, abs=1e-3)  # from the push's end
    assert st.t_end_s == pytest.approx(6.3, abs=2e-3)
    # everything before the ServerApp's pull is the same for every member; a lone client waits the mean phase
    alone = _stage(DeploymentClock(LOCAL_ONLY, "expected"), 1).messages[0]
    assert alone.parts["supernode_poll_s"] == pytest.approx(1.5, abs=1e-3)
    for m in st.messages:
        assert (m.t_down_s, m.t_up_s, m.parts["reply_pickup_s"]) == pytest.approx(
            (alone.t_down_s, alone.t_up_s, st.messages[0].parts["reply_pickup_s"]), abs=1e-9)
    assert st.server_s["pull_s"] == pytest.approx(0.3)


def test_replies_still_uploading_are_pulled_behind_their_upload():
    # the same three clients behind a 1 MiB/s server downlink: each upload gets a third → 3 s (+ 0.1 s of
    # CPU), done at 8.35 s. At the 6 s poll all three are known; the first pull finds its one object missing
    # and retries 1 s later (7 s, still missing), then 2 s later (9 s) → 9.0 s, + the object's 0.1 s; the
    # other two are complete by then: 9.2, 9.3 s
    st = _stage(DeploymentClock(LOCAL_ONLY, "expected"), 3, server_down=MIB)
    assert [m.t_up_s for m in st.messages] == pytest.approx([3.1] * 3, abs=1e-6)
    assert [m.t_replied_s for m in st.messages] == pytest.approx([9.1, 9.2, 9.3], abs=2e-3)


def test_different_links_poll_grids_and_sampled_phases_make_their_own_classes():
    clock = DeploymentClock(LOCAL_ONLY, "expected")
    msgs = [StageMessage(cid, 1000, MIB, 1, 1, compute_s=2.0) for cid in range(4)]
    links = {0: FAST, 1: SLOW, 2: FAST, 3: SLOW}
    st = clock.run_stage("fit", msgs, links)
    assert len(st.classes) == 2 and st.class_of == [0, 1, 0, 1]
    # a 1 MiB upload at 10 MB/s takes 0.105 s instead of 1 ms
    assert st.messages[1].t_up_s - st.messages[0].t_up_s == pytest.approx(MIB / 1e7 - MIB / 1e9)
    # next stage: clients 0 and 2 now sit on their own poll grid, client 4 is new (idle): three classes
    st2 = clock.run_stage("fit", msgs[:1] + msgs[2:3] + [StageMessage(4, 1000, MIB, 1, 1, compute_s=2.0)],
                          {0: FAST, 2: FAST, 4: FAST})
    assert st2.class_of == [0, 0, 1]
    # sampled phases: every client draws its own, so none share a class
    sampled = DeploymentClock(LOCAL_ONLY, "sampled", seed=1).run_stage("fit", msgs, {c: FAST for c in range(4)})
    assert len(sampled.classes) == 4


def test_the_serverapp_pays_one_request_per_object_of_each_reply_it_pulls():
    """Flower's ServerApp pulls a reply object by object from the SuperLink (``HttpGrid.pull_messages`` →
    ``pull_objects``): a hop over loopback. A reply of 600 objects (a 3M-parameter model sent as 300 arrays)
    takes 600 requests to pull where one of the same bytes in 1 object takes one: validation 4's ServerApp
    polls of 2.7 to 13 s where the per-MiB copy charged 0.7 s."""
    per_object = FlowerCosts(request_s=0.0, hop_object_s=0.002, hop_s_per_mib=0.0, clientapp_start_s=0.0,
                             clientapp_other_s=0.0, aggregate_s_per_mib=0.0, local_s_per_mib=0.0)

    def replied(objects: int) -> list[float]:
        msgs = [StageMessage(cid, 1000, MIB, 1, objects, compute_s=2.05) for cid in range(3)]
        st = DeploymentClock(per_object, "expected").run_stage("fit", msgs, {c: FAST for c in range(3)})
        return [m.t_replied_s for m in st.messages]

    few, many = replied(1), replied(600)
    # one after another: each reply's pull is its objects × 2 ms (2 ms for one object, 1.2 s for 600)
    assert [b - a for a, b in zip(few, few[1:])] == pytest.approx([0.002] * 2, abs=1e-9)
    assert [b - a for a, b in zip(many, many[1:])] == pytest.approx([1.2] * 2, abs=1e-9)

