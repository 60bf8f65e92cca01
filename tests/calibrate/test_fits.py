"""`fedbw calibrate`'s fits recover known constants, and an interrupted calibration writes nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fedbw.calibrate.fit import fit_app_code, fit_hops, fit_request, fit_start, nonnegative_lstsq
from fedbw.netmodel.flower import MIB, FlowerCosts
from fedbw.results.messages import MeasuredMessage


def msg(**fields: object) -> MeasuredMessage:
    """A measured message with the given fields (the rest zero: what a fit does not read)."""
    base: dict[str, object] = {"round": 1, "client_id": 0, "stage": "train", "bytes_down": 0.0, "bytes_up": 0.0,
                               "flower_bytes_down": 0.0, "flower_bytes_up": 0.0, "t_down_s": 0.0, "t_up_s": 0.0,
                               "t_compute_s": 0.0, "t_framework_s": 0.0, "total_s": 0.0, "parts": {}}
    return MeasuredMessage(**{**base, **fields})  # type: ignore[arg-type]


def test_hop_fit_recovers_per_message_object_and_mib_costs() -> None:
    truth = (0.004, 0.02)
    messages = []
    for objects, mib in ((4, 0.1), (8, 0.5), (70, 45.0), (3, 4.0), (9, 32.0)):
        t = truth[0] * objects + truth[1] * mib
        messages.append(msg(**{"objects_down": objects, "objects_up": objects, "flower_bytes_down": mib * MIB,
                         "flower_bytes_up": mib * MIB, "t_down_s": t, "t_up_s": t}))
    fit = fit_hops(messages)
    assert [fit[k].value for k in ("hop_object_s", "hop_s_per_mib")] == pytest.approx(truth, abs=1e-9)


def test_start_request_and_app_code_fits_separate_the_start_the_fixed_work_and_the_local_pull() -> None:
    costs = FlowerCosts()
    messages = []
    for i, mib in enumerate((0.1, 0.5, 45.0) * 4):
        start = 1.4 + costs.superexec_poll_s / 2
        messages.append(msg(**{"model": "m", "client_id": 0, "process_start_s": start, "flower_bytes_down": mib * MIB,
                         "objects_down": 5, "parts": {"clientapp_start_s": start + 0.8 + 0.004 * mib},
                         "t_receiving_s": 10.0 * i, "t_sent_s": 10.0 * i + 6.98}))
    fit = {**fit_start(messages, costs), **fit_request(messages, costs), **fit_app_code(messages, costs)}
    assert fit["clientapp_start_s"].value == pytest.approx(1.4)
    assert fit["clientapp_other_s"].value == pytest.approx(0.8)
    assert fit["local_s_per_mib"].value == pytest.approx(0.004)
    assert "node_download_share" not in fit  # retired: the pull after the download is the model's, not fitted
    assert fit["request_s"].value == pytest.approx(0.02)  # 10 − 6.98 − the 3 s sleep
    assert all(type(c.value) is float for c in fit.values())  # plain floats: the file is TOML


def test_the_start_counts_from_the_pull_when_the_process_starts_during_the_download() -> None:
    """A large message: the SuperExec launches the ClientApp at "Receiving", before the objects are in, and
    the ClientApp's own pull then backs off until they are. Measured from "Received" (the old fit), such
    messages looked like fast starts and slow pulls; the fit must recover the same constants either way."""
    from fedbw.netmodel.flower_costs import pull_stored_at

    costs = FlowerCosts()
    start, other, per_mib, objects = 1.4, 0.8, 0.004, 131
    launch = start + costs.superexec_poll_s / 2
    messages = []
    for i, (mib, download) in enumerate(((0.1, 0.05), (45.0, 3.0), (0.5, 0.1), (45.0, 6.0)) * 3):
        t_has = pull_stored_at(launch, download, objects, costs)
        t_app = t_has + other + per_mib * mib
        messages.append(msg(**{"model": "m", "client_id": 0, "launch_s": launch, "process_start_s": launch - download,
                         "flower_bytes_down": mib * MIB, "objects_down": objects,
                         "parts": {"clientapp_start_s": t_app - download}}))
    fitted = dataclasses.replace(costs, **{k: c.value for k, c in fit_start(messages, costs).items()})
    assert fitted.clientapp_start_s == pytest.approx(start)
    fit = fit_app_code(messages, fitted)
    assert fit["clientapp_other_s"].value == pytest.approx(other)
    assert fit["local_s_per_mib"].value == pytest.approx(per_mib)


def test_the_app_code_fit_recovers_its_constants_behind_flowers_backoff() -> None:
    """Messages laid out by the clock's own expression with known constants — unshaped ones, and shaped
    ones whose ClientApp waited for its download at one of Flower's retry points — are fitted back: the
    backoff is the model's, so no constant absorbs it."""
    from fedbw.netmodel.flower import app_code_runs_s

    costs = dataclasses.replace(FlowerCosts(), hop_object_s=0.008, hop_s_per_mib=0.0065)
    truth = dataclasses.replace(costs, local_s_per_mib=0.008, clientapp_other_s=0.6)
    launch = costs.clientapp_start_s + costs.superexec_poll_s / 2
    messages = []
    for mib, download, objects in ((0.1, 0.0, 4), (0.5, 0.0, 8), (45.0, 0.0, 131), (44.6, 3.0, 131),
                                   (44.6, 5.6, 131), (44.6, 9.2, 131), (44.6, 0.5, 131)):
        t_app = app_code_runs_s(truth, launch, download, objects, mib * MIB)
        messages.append(msg(launch_s=launch, process_start_s=launch - download, objects_down=objects,
                            flower_bytes_down=mib * MIB, parts={"clientapp_start_s": t_app - download}))
    fit = fit_app_code(messages, costs)
    assert fit["local_s_per_mib"].value == pytest.approx(0.008)
    assert fit["clientapp_other_s"].value == pytest.approx(0.6)
    assert fit["clientapp_other_s"].samples == 7


def test_nonnegative_least_squares_drops_a_column_that_goes_negative() -> None:
    import numpy as np

    a = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
    assert nonnegative_lstsq(a, np.array([3.0, 2.0, 1.0])).tolist() == pytest.approx([2.0, 0.0])


def test_calibrate_interrupted_writes_nothing_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during the measurement: exit 130, a line saying no calibration was written (not the run
    commands' "finished rounds are kept"), and a file already at --out left byte for byte."""
    from typer.testing import CliRunner

    import fedbw.calibrate.measure as measure
    from fedbw.cli import app

    def interrupted(**_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(measure, "measure", interrupted)
    target = tmp_path / "cal.toml"
    target.write_text("# earlier\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["calibrate", "--out", str(target)])
    assert res.exit_code == 130, res.output
    assert "no calibration written" in res.output and "rounds are kept" not in res.output
    assert target.read_text(encoding="utf-8") == "# earlier\n"


def test_download_round_trip_fit_recovers_the_requests_beyond_the_model() -> None:
    """Shaped downloads laid out by the model plus 6 round trips (one of them also met the push: +1.2 s);
    the median takes the six, and a link without round trips has nothing to fit."""
    from fedbw.calibrate.fit import fit_download_round_trips
    from fedbw.netmodel.objects import transfer_objects_s
    from fedbw.netmodel.transfer import ClientLink

    costs = dataclasses.replace(FlowerCosts(), hop_object_s=0.006, hop_s_per_mib=0.006)
    link = ClientLink(28.7, 287.0, 0.025)
    nbytes, objects = 46.8e6, 131
    model = 2 * link.rtt_s + transfer_objects_s(nbytes, objects, link.down_bytes_per_s, link.rtt_s, 2,
                                                costs.hop_object_s, costs.hop_s_per_mib / MIB)
    msgs = [msg(objects_down=objects, flower_bytes_down=nbytes, t_down_s=model + 6 * link.rtt_s + extra)
            for extra in (0.0, 0.0, 0.0, 1.2)]
    fit = fit_download_round_trips([(m, link) for m in msgs], costs)["download_round_trips"]
    assert fit.value == pytest.approx(6.0) and fit.samples == 4
    assert fit_download_round_trips([(m, ClientLink(28.7, 287.0, 0.0)) for m in msgs], costs) == {}
