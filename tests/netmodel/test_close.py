"""A training stage closed at a deadline or once enough replies are in (issue 32.2), by hand: links only,
where a reply counts when it arrives, and on Flower's clock, where the ServerApp pulls every 3 s and checks
the deadline before each pull."""

import pytest

from fedbw.netmodel import ClientLink, MessageSizes, round_timeline
from fedbw.netmodel.close import StageClose, close_links_only
from fedbw.netmodel.flower import DeploymentClock, FlowerCosts
from fedbw.netmodel.stage import StageMessage
from fedbw.netmodel.transfer import ClientLink as Link

FREE = FlowerCosts(request_s=0.0, hop_object_s=0.0, hop_s_per_mib=0.0, clientapp_start_s=0.0,
                   clientapp_other_s=0.0, aggregate_s_per_mib=0.0, local_s_per_mib=0.0)
FAST = Link(8000.0, 8000.0, 0.0)


def test_links_only_the_enough_th_reply_closes_and_the_deadline_caps_it() -> None:
    assert close_links_only(0.0, [3.0, 1.0, 2.0], StageClose(enough=2)) == (2.0, [True, False, False])
    assert close_links_only(0.0, [3.0, 1.0, 2.0], StageClose(deadline_s=1.5)) == (1.5, [True, False, True])
    assert close_links_only(0.0, [3.0, 1.0, 2.0], StageClose()) == (3.0, [False, False, False])
    assert close_links_only(10.0, [13.0], StageClose(deadline_s=1.0)) == (11.0, [True])  # nobody in time
    with pytest.raises(ValueError):
        StageClose(deadline_s=0.0)


def test_a_links_only_round_ends_at_its_close_and_the_late_client_holds_no_barrier() -> None:
    fast, slow = ClientLink(80, 800, 0.0), ClientLink(8, 80, 0.0)
    ex = [MessageSizes("fit", 1e6, 1e6, True)]
    rows = [(0, fast, 1.0), (1, fast, 1.0), (2, slow, 1.0)]
    whole = round_timeline(rows, lambda cid: ex)
    t_fast = 1e6 * 8 / 800e6 + 1.0 + 1e6 * 8 / 80e6  # 1.11 s
    assert whole.round_time_s == pytest.approx(1e6 * 8 / 80e6 + 1.0 + 1.0)  # the slow client: 2.1 s
    two = round_timeline(rows, lambda cid: ex, close=StageClose(enough=2))
    assert two.round_time_s == pytest.approx(t_fast) and two.critical("fit").client_id in (0, 1)
    assert two.late_clients == 1 and two.wasted_bytes_up == 1e6 and two.waited_for_deadline_s == 0
    timed = round_timeline(rows, lambda cid: ex, close=StageClose(deadline_s=1.5))
    assert timed.round_time_s == pytest.approx(1.5) and timed.late_clients == 1
    assert timed.waited_for_deadline_s == pytest.approx(1.5 - t_fast)
    assert timed.framework_time_s == pytest.approx(0.0)  # the wait for the deadline is not Flower's time


@pytest.mark.parametrize("deployment", [False, True])
def test_a_client_late_at_the_close_takes_no_part_in_the_rounds_later_stages(deployment: bool) -> None:
    """SecAgg+'s shape: the training stage closes, then an unmask stage goes to the clients whose replies the
    server holds. The late client has no row in it, and the server's work after it counts the late one
    (``server_extra_s``'s third argument)."""
    # the slow download: 16 s (a slow upload, once announced, is pulled behind as Flower does: not late)
    fast, slow = ClientLink(80, 800, 0.0), ClientLink(80, 0.5, 0.0)
    ex = [MessageSizes("collect", 1e6, 1e6, True), MessageSizes("unmask", 1e3, 1e3, False)]
    rows = [(0, fast, 1.0), (1, fast, 1.0), (2, slow, 1.0)]
    seen: list[tuple[str, int, int]] = []

    def extra(stage: str, clients: int, lost: int) -> float:
        seen.append((stage, clients, lost))
        return 0.0

    opts = {"deployment": DeploymentClock(FREE, "expected"), "server_extra_s": extra} if deployment else {}
    tl = round_timeline(rows, lambda cid: ex, close=StageClose(enough=2), **opts)
    assert tl.late_ids == {2}
    assert sorted(t.client_id for t in tl.timings if t.stage == "unmask") == [0, 1]
    assert sorted(t.client_id for t in tl.timings if t.stage == "collect") == [0, 1, 2]
    if deployment:
        assert seen == [("collect", 3, 0), ("unmask", 2, 1)]
    assert round_timeline(rows, lambda cid: ex, **opts).late_ids == set()  # no close: everyone in every stage


def _stage(close: StageClose) -> object:
    clock = DeploymentClock(FREE, "expected")
    # each node idle since it started: its pull at 1.5 s (the mean phase), the ClientApp 0.5 s later; client 0
    # trains 1 s, client 1 10 s: their replies reach the SuperLink just after 3 s and 12 s
    return clock.run_stage("fit", [StageMessage(0, 1000, 1000, 1, 1, compute_s=1.0),
                                   StageMessage(1, 1000, 1000, 1, 1, compute_s=10.0)], {0: FAST, 1: FAST},
                           close=close)


def test_the_serverapp_closes_at_its_first_poll_at_or_after_the_deadline() -> None:
    every = _stage(StageClose())
    # the ServerApp polls at 0, 3, 6, … s: it pulls client 0 at 6 s and client 1 at 15 s
    assert every.t_end_s == pytest.approx(15.0, abs=1e-3) and every.class_late == [0.0, 0.0]
    # a deadline of 7 s is checked at the 9 s poll: no pull then, client 1 is late
    timed = _stage(StageClose(deadline_s=7.0))
    assert timed.t_end_s == pytest.approx(9.0, abs=1e-3) and timed.class_late == [0.0, 1.0]
    assert timed.deadline_wait_s == pytest.approx(3.0, abs=1e-3)  # its last pull was at 6 s
    # a deadline of exactly 9 s: the 9 s poll is not before it either
    assert _stage(StageClose(deadline_s=9.0)).t_end_s == pytest.approx(9.0, abs=1e-3)
    # of 9.5 s: the 9 s poll pulls (nothing new), the 12 s poll does not happen: client 1 is still late
    late = _stage(StageClose(deadline_s=9.5))
    assert late.t_end_s == pytest.approx(12.0, abs=1e-3) and late.class_late == [0.0, 1.0]


def test_enough_replies_close_the_stage_after_the_pull_that_brought_them() -> None:
    one = _stage(StageClose(enough=1))
    assert one.t_end_s == pytest.approx(6.0, abs=1e-3) and one.class_late == [0.0, 1.0]
    assert one.deadline_wait_s == 0.0


def test_a_late_client_keeps_its_own_poll_grid_for_the_next_stage() -> None:
    clock = DeploymentClock(FREE, "expected")
    msgs = [StageMessage(0, 1000, 1000, 1, 1, compute_s=1.0), StageMessage(1, 1000, 1000, 1, 1, compute_s=10.0)]
    clock.run_stage("fit", msgs, {0: FAST, 1: FAST}, close=StageClose(enough=1))
    nxt = clock.run_stage("fit", msgs[:1] + [StageMessage(1, 1000, 1000, 1, 1, compute_s=1.0)], {0: FAST, 1: FAST})
    # client 1 is still training when the next stage is pushed at 6 s: it finds the new message only at its
    # pull right after sending its late reply (≈ 12 s), so the next stage waits for it
    assert nxt.messages[1].parts["supernode_poll_s"] == pytest.approx(12.0 - 6.0, abs=0.01)


def test_a_reply_the_superlink_knows_is_pulled_behind_its_upload_past_the_deadline() -> None:
    """Flower 1.42's ``pull_messages`` returns every reply the SuperLink knows, then pulls each one's objects,
    retrying while they arrive (up to ``PULL_MAX_TIME`` = 7,200 s): a deadline checked before each pull cannot
    cut a slow upload that had started by the last pull before it."""
    slow_up = Link(8.0, 8000.0, 0.0)  # 10 MB up: 10 s
    clock = DeploymentClock(FREE, "expected")
    st = clock.run_stage("fit", [StageMessage(0, 1000, 1000, 1, 1, compute_s=1.0),
                                 StageMessage(1, 1000, 10e6, 1, 2, compute_s=1.0)], {0: FAST, 1: slow_up},
                         close=StageClose(deadline_s=7.0))
    assert st.class_late == [0.0, 0.0]  # both replies known at the 6 s poll: both pulled
    assert st.t_end_s > 13.0  # behind the 10 s upload that started at ≈ 3 s
