"""The constants' verdicts: a constant that describes the data earns its place on held-out error, one
fitted to noise does not, and every interval holds its value."""

from __future__ import annotations

import random

from fedbw.calibrate.evaluate import FAMILIES, FAMILY_OF_TERM, as_json, bootstrap, evaluate
from fedbw.calibrate.fit import UNSHAPED
from fedbw.netmodel.flower import MIB
from fedbw.netmodel.terms import TERMS
from fedbw.results.messages import MeasuredMessage

HOP_S_PER_MIB = 0.02  #: the truth: a cost per MiB, none per object


def _transfers(n: int = 60, seed: int = 1) -> list[MeasuredMessage]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        objects, mib = rng.choice([(4, 0.1), (8, 0.5), (131, 45.0), (3, 4.0), (9, 32.0), (70, 12.0)])
        t = HOP_S_PER_MIB * mib + rng.gauss(0.0, 0.004)
        out.append(MeasuredMessage(round=i, client_id=0, stage="train", bytes_down=mib * MIB, bytes_up=mib * MIB,
                                   flower_bytes_down=mib * MIB, flower_bytes_up=mib * MIB, t_down_s=max(0.0, t),
                                   t_up_s=max(0.0, t), t_compute_s=0.0, t_framework_s=0.0, total_s=2 * t, parts={},
                                   objects_down=objects, objects_up=objects, run=UNSHAPED, model="m"))
    return out


def _aggregation() -> list[list[float]]:
    return [[float(k), float(mib), 0.003 * k * mib] for mib in (1, 16, 64) for k in (2, 4, 8)]


def test_a_real_cost_earns_its_place_and_noise_does_not() -> None:
    verdicts, families = evaluate(_transfers(), _aggregation(), folds=5, resamples=40)
    by = {v.name: v for v in verdicts}
    assert by["hop_s_per_mib"].earns_place
    assert not by["hop_object_s"].earns_place  # the data has no per-object cost
    assert by["hop_object_s"].low <= 0.0005  # its interval reaches (about) 0
    assert by["aggregate_s_per_mib"].error_with_s < 1e-9 < by["aggregate_s_per_mib"].error_without_s  # exact data
    assert by["hop_s_per_mib"].error_without_s > by["hop_s_per_mib"].error_with_s
    assert families["unshaped transfer"] < 0.01 and families["empty pull"] != families["empty pull"]  # none: NaN
    data = as_json(verdicts, families, folds=5)
    assert data["families_held_out_error_s"]["empty pull"] is None  # NaN becomes null in JSON


def test_the_intervals_are_the_bootstraps_and_repeatable_and_every_term_has_a_family() -> None:
    msgs, agg = _transfers(), _aggregation()
    intervals = bootstrap(msgs, agg, resamples=40)
    verdicts, _ = evaluate(msgs, agg, folds=3, resamples=40)
    for v in verdicts:
        assert intervals[v.name] == (v.low, v.high) and v.low <= v.high
    assert bootstrap(msgs, agg, resamples=40) == intervals  # seeded: the same every time
    assert set(FAMILY_OF_TERM) == set(TERMS) and set(FAMILY_OF_TERM.values()) <= set(FAMILIES)


def test_hop_by_direction_holds_the_one_fitted_hop_against_each_direction() -> None:
    """Uploads that cost three times the downloads' time: the one hop term fits between them, so downloads come
    out below 1 and uploads above it; transfers alike in both directions come out at 1."""
    from dataclasses import replace

    from fedbw.calibrate.evaluate import hop_by_direction

    alike = hop_by_direction(_transfers(), _aggregation())
    assert alike["down"]["transfers"] == alike["up"]["transfers"] == 60
    assert abs(alike["down"]["median_measured_over_predicted"] - 1) < 0.05
    assert abs(alike["up"]["median_measured_over_predicted"] - 1) < 0.05
    skewed = hop_by_direction([replace(m, t_up_s=3 * m.t_down_s) for m in _transfers()], _aggregation())
    assert skewed["down"]["median_measured_over_predicted"] < 0.8 < 1.2 < skewed["up"]["median_measured_over_predicted"]
    none = hop_by_direction([replace(m, objects_up=0) for m in _transfers()], _aggregation())
    assert none["up"] == {"transfers": 0, "median_measured_over_predicted": None}


def test_serverapp_work_times_single_pushes_and_pulls_after_the_upload_against_the_clock() -> None:
    """Pushes and pulls that cost 5 ms an object and nothing per MiB: the fit finds that, the clock (the hop at 2
    ms an object for the pull, the local copy per MiB for the push) sits below it; a pull that started while
    the reply uploaded, a push or pull that moved several messages, and a message without the stamps are left
    out."""
    from dataclasses import replace

    from fedbw.calibrate.evaluate import pulled_after_upload, serverapp_work
    from fedbw.netmodel.flower import FlowerCosts

    msgs = []
    for m in _transfers(n=24, seed=3):
        own = 0.005 * m.objects_up
        msgs.append(replace(m, t_serverapp_push_s=0.005 * m.objects_down, serverapp_pushed_with=1,
                            t_serverapp_pull_s=own, serverapp_pulled_with=1,
                            parts={"serverapp_poll_s": own + 0.5}))
    behind = replace(msgs[0], parts={"serverapp_poll_s": 0.0})  # began before the last byte came in
    shared = replace(msgs[1], serverapp_pulled_with=2, serverapp_pushed_with=3)
    older = replace(msgs[2], t_serverapp_push_s=None, t_serverapp_pull_s=None)  # a file from before the stamps
    assert pulled_after_upload(msgs[0]) and not pulled_after_upload(behind) and not pulled_after_upload(older)
    costs = FlowerCosts(hop_object_s=0.002, hop_s_per_mib=0.0, local_s_per_mib=0.001)
    work = serverapp_work(msgs + [behind, shared, older], costs)
    pull, push = work["pull"], work["push"]
    assert pull["messages"] == 24 and pull["pulled_behind_the_upload"] == 1
    assert push["messages"] == 25  # the pull behind the upload came after a push of its own, alone
    assert pull["median_measured_over_predicted"] == 2.5  # 5 ms against the hop's 2 ms an object
    assert push["median_measured_over_predicted"] > 2.5  # the clock's push is per MiB alone
    for w in (pull, push):
        assert abs(w["fitted"]["hop_object_s"] - 0.005) < 1e-9 and abs(w["fitted"]["hop_s_per_mib"]) < 1e-9
    one_size = serverapp_work([replace(m, objects_up=4, objects_down=4) for m in msgs[:3]], costs)
    assert one_size["pull"]["fitted"]["hop_object_s"] is None  # one object count: no fit
    assert serverapp_work(_transfers(n=4), costs)["pull"] == {"messages": 0, "objects": [],
                                                              "pulled_behind_the_upload": 0}
    only_behind = serverapp_work([behind], costs)["pull"]  # its size is shown, its time is not used
    assert only_behind["messages"] == 0 and only_behind["objects"] == [behind.objects_up]
