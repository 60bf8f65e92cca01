"""A device's one core, shared by its SuperNode and the ClientApp launched beside a download; and, since
the SuperLink's shared CPU is no term, clients alike on links of their own move objects as one alone."""

from __future__ import annotations

import pytest

from fedbw.netmodel.contention import node_cpu_during_download_s
from fedbw.netmodel.flower import DeploymentClock, FlowerCosts
from fedbw.netmodel.stage import StageMessage
from fedbw.netmodel.transfer import ClientLink


def test_the_supernode_delays_the_clientapp_by_its_share_of_the_download_after_the_launch() -> None:
    # a 4 s download of 2 s hop CPU, launched 1 s in: three quarters of it falls after the launch
    assert node_cpu_during_download_s(0.5, 2.0, 0.0, 4.0, 1.0) == pytest.approx(0.5 * 2.0 * 0.75)
    assert node_cpu_during_download_s(0.5, 2.0, 0.0, 4.0, 5.0) == 0.0  # over before the launch
    assert node_cpu_during_download_s(0.0, 2.0, 0.0, 4.0, 1.0) == 0.0  # no share: nothing
    assert node_cpu_during_download_s(0.5, 2.0, 0.0, 4.0, -1.0) == pytest.approx(1.0)  # launched first: all


def _stage(n: int) -> list[float]:
    costs = FlowerCosts(hop_object_s=0.006, hop_s_per_mib=0.006)
    link = ClientLink(30.0, 300.0, 0.025)
    msgs = [StageMessage(cid, 47e6, 47e6, 131, 134, compute_s=0.1) for cid in range(n)]
    st = DeploymentClock(costs).run_stage("fit", msgs, {cid: link for cid in range(n)})
    return [st.messages[0].t_down_s, st.messages[0].t_up_s]


def test_clients_on_links_of_their_own_move_objects_as_one_alone() -> None:
    assert _stage(8) == pytest.approx(_stage(1), rel=1e-12)
