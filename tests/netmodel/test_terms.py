"""Cost terms: every CPU constant of FlowerCosts belongs to one term, a term's time is its features times
the constants, and the clock lays work with the same expressions calibration fits with."""

from __future__ import annotations

import dataclasses

import pytest

from fedbw.netmodel.flower_costs import FLOWER_SETTINGS
from fedbw.netmodel.flower import MIB, DeploymentClock, FlowerCosts, download_alone_s, objects_alone_s
from fedbw.netmodel.stage import StageMessage
from fedbw.netmodel.terms import HOP, LOCAL_COPY, TERMS, constants_of_terms
from fedbw.netmodel.transfer import ClientLink

#: FlowerCosts fields that are Flower's intervals or settings, read from Flower's source: no term's.
INTERVALS = FLOWER_SETTINGS | {"secagg", "intervals"}  # SecAgg+'s own terms; the constants' uncertainty


def test_every_cpu_constant_has_exactly_one_term() -> None:
    fields = {f.name for f in dataclasses.fields(FlowerCosts)} - INTERVALS
    owners = constants_of_terms()
    assert set(owners) == fields
    assert sum(len(t.constants) for t in TERMS.values()) == len(owners)  # no constant in two terms


def test_a_terms_time_is_its_features_times_the_constants() -> None:
    c = FlowerCosts(hop_object_s=0.004, hop_s_per_mib=0.02, local_s_per_mib=0.01)
    assert HOP.seconds(c, objects=10, nbytes=3 * MIB) == pytest.approx(0.04 + 0.06)
    assert HOP.row(objects=10, nbytes=3 * MIB) == [10.0, 3.0]
    assert c.local_cpu_s(2 * MIB) == LOCAL_COPY.seconds(c, nbytes=2 * MIB) == pytest.approx(0.02)


def test_the_clock_moves_an_unshaped_message_in_exactly_the_hop_terms_time() -> None:
    """What the hop fit assumes of an unshaped transfer (loopback: no round trip, no rate limit) is what
    the clock lays: change one and this fails."""
    c = FlowerCosts(hop_object_s=0.004, hop_s_per_mib=0.02)
    nbytes, objects = 47e6, 131
    loopback = ClientLink(float("inf"), float("inf"), 0.0)
    st = DeploymentClock(c).run_stage("fit", [StageMessage(0, nbytes, nbytes, objects, objects)], {0: loopback})
    assert st.messages[0].t_down_s == pytest.approx(HOP.seconds(c, objects=objects, nbytes=nbytes))
    assert download_alone_s(c, 0.0, objects_alone_s(c, nbytes, objects, float("inf"), 0.0)) == \
        pytest.approx(HOP.seconds(c, objects=objects, nbytes=nbytes))


def test_download_round_trips_add_that_many_round_trips() -> None:
    c = FlowerCosts()
    more = dataclasses.replace(c, download_round_trips=3.0)
    assert download_alone_s(more, 0.025, 1.0) - download_alone_s(c, 0.025, 1.0) == pytest.approx(0.075)
