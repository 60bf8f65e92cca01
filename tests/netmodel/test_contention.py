"""The SuperLink's CPU shared by concurrent transfers: the overlap of transfers at unknown phases, the CPU
factor, and what they do to a stage on the clock."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedbw.netmodel.contention import expected_overlap, hop_cpu_factor
from fedbw.netmodel.flower import DeploymentClock, FlowerCosts
from fedbw.netmodel.stage import StageMessage
from fedbw.netmodel.transfer import ClientLink


def _overlap_by_sampling(t: float, p: float, n: int = 200_000) -> float:
    rng = random.Random(7)
    total = 0.0
    for _ in range(n):
        d = abs(rng.uniform(0, p) - rng.uniform(0, p))
        total += max(0.0, t - d) / t
    return total / n


@pytest.mark.parametrize("t", [0.5, 1.5, 3.0, 6.0, 30.0])
def test_expected_overlap_is_the_mean_over_uniform_phases(t: float) -> None:
    assert expected_overlap(t, 3.0) == pytest.approx(_overlap_by_sampling(t, 3.0), abs=0.005)


@given(st.floats(0.001, 100.0), st.floats(0.001, 100.0), st.floats(1.0, 10.0))
def test_expected_overlap_is_a_share_that_grows_with_the_transfer(t: float, p: float, grow: float) -> None:
    assert 0.0 <= expected_overlap(t, p) <= 1.0
    assert expected_overlap(t * grow, p) >= expected_overlap(t, p) - 1e-12
    assert expected_overlap(p, p) == pytest.approx(2 / 3)  # both branches meet at T = P


def test_edges_of_the_overlap() -> None:
    assert expected_overlap(0.0, 3.0) == 0.0
    assert expected_overlap(2.0, 0.0) == 1.0  # starts together: the whole transfer overlaps


def test_the_cpu_factor_splits_the_hop_between_device_and_superlink() -> None:
    assert hop_cpu_factor(0.0, 8.0, 2.0) == 0.5  # no server share: the device's speed alone
    assert hop_cpu_factor(0.4, 1.0) == 1.0  # one transfer: the calibration's meaning
    assert hop_cpu_factor(0.4, 5.0) == pytest.approx(0.6 + 0.4 * 5)
    assert hop_cpu_factor(0.4, 5.0, client_speed=2.0, server_speed=4.0) == pytest.approx(0.3 + 0.4 * 5 / 4)
    assert hop_cpu_factor(0.4, 0.2) == 1.0  # never below one transfer


def _stage(costs: FlowerCosts, n: int) -> list[float]:
    link = ClientLink(30.0, 300.0, 0.025)
    msgs = [StageMessage(cid, 47e6, 47e6, 131, 134, compute_s=0.1) for cid in range(n)]
    st_ = DeploymentClock(costs).run_stage("fit", msgs, {cid: link for cid in range(n)})
    m = st_.messages[0]
    return [m.t_down_s, m.t_up_s]


def test_a_shared_superlink_stretches_transfers_only_when_clients_move_objects_together() -> None:
    base = FlowerCosts(hop_object_s=0.006, hop_s_per_mib=0.006)
    shared = dataclasses.replace(base, server_share=0.5)
    assert _stage(shared, 1) == _stage(base, 1)  # one client: unchanged
    assert _stage(base, 8) == _stage(base, 1)  # eight without the share: as one
    assert all(a > b for a, b in zip(_stage(shared, 8), _stage(base, 8)))  # with it: both directions longer
    # the download (round trips and CPU bound) grows more than the upload (link bound) ...
    d8, u8 = _stage(shared, 8)
    d1, u1 = _stage(base, 1)
    assert d8 / d1 > u8 / u1 > 1.0
    # ... and a SuperLink twice as fast takes back part of it
    fast = DeploymentClock(shared).run_stage(
        "fit", [StageMessage(c, 47e6, 47e6, 131, 134, compute_s=0.1) for c in range(8)],
        {c: ClientLink(30.0, 300.0, 0.025) for c in range(8)}, server_cpu=2.0).messages[0]
    assert d1 < fast.t_down_s < d8


def test_stage_concurrency_counts_other_classes_by_overlap_and_own_members_by_their_grid() -> None:
    from fedbw.netmodel.contention import stage_concurrency

    windows = [(0.0, 4.0), (2.0, 6.0), (10.0, 12.0)]
    counts = [3, 2, 5]
    # class 0: its 2 other members on one grid (whole), class 1's 2 transfers over half of it, class 2 never
    assert stage_concurrency(0, windows, counts, True, 3.0) == pytest.approx(2 + 2 * 0.5)
    # idle SuperNodes: own members at the expected overlap of independent phases
    assert stage_concurrency(0, windows, counts, False, 3.0) == pytest.approx(2 * expected_overlap(4.0, 3.0) + 1.0)
    assert stage_concurrency(2, windows, counts, True, 3.0) == pytest.approx(4.0)
    assert stage_concurrency(0, [(1.0, 1.0)], [4], True, 3.0) == 0.0  # an empty window meets nothing


def test_clients_on_one_grid_meet_wholly_idle_ones_in_part() -> None:
    """The first stage finds idle SuperNodes (independent phases); the next finds them polling on the grid
    their last replies anchored, together: the same downloads then meet at the SuperLink for longer."""
    costs = FlowerCosts(hop_object_s=0.006, hop_s_per_mib=0.006, server_share=0.5)
    link = ClientLink(30.0, 300.0, 0.025)
    msgs = [StageMessage(cid, 47e6, 47e6, 131, 134, compute_s=0.1) for cid in range(4)]
    clock = DeploymentClock(costs)
    first = clock.run_stage("fit", msgs, {cid: link for cid in range(4)}).messages[0]
    second = clock.run_stage("fit", msgs, {cid: link for cid in range(4)}).messages[0]
    alone = DeploymentClock(costs).run_stage("fit", msgs[:1], {0: link}).messages[0]
    assert alone.t_down_s < first.t_down_s < second.t_down_s
