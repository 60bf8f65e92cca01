"""`fedbw calibrate`'s fits recover known constants, and an interrupted calibration writes nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fedbw.calibrate.measure import fit_hops, fit_node_share, fit_process, nonnegative_lstsq
from fedbw.netmodel.flower import MIB, FlowerCosts


def test_hop_fit_recovers_per_message_object_and_mib_costs() -> None:
    truth = (0.03, 0.004, 0.02)
    messages = []
    for objects, mib in ((4, 0.1), (8, 0.5), (70, 45.0), (3, 4.0), (9, 32.0)):
        t = truth[0] + truth[1] * objects + truth[2] * mib
        messages.append({"objects_down": objects, "objects_up": objects, "flower_bytes_down": mib * MIB,
                         "flower_bytes_up": mib * MIB, "t_down_s": t, "t_up_s": t})
    fit = fit_hops(messages)
    assert [fit[k].value for k in ("hop_message_s", "hop_object_s", "hop_s_per_mib")] == pytest.approx(truth, abs=1e-9)


def test_process_fit_separates_the_start_the_fixed_work_and_the_local_pull() -> None:
    costs = FlowerCosts()
    messages = []
    for i, mib in enumerate((0.1, 0.5, 45.0) * 4):
        start = 1.4 + costs.superexec_poll_s / 2
        messages.append({"model": "m", "client_id": 0, "process_start_s": start, "flower_bytes_down": mib * MIB,
                         "objects_down": 5, "parts": {"clientapp_start_s": start + 0.8 + 0.004 * mib},
                         "t_receiving_s": 10.0 * i, "t_sent_s": 10.0 * i + 6.98})
    fit = fit_process(messages, costs)
    assert fit["clientapp_start_s"].value == pytest.approx(1.4)
    assert fit["clientapp_other_s"].value == pytest.approx(0.8)
    assert fit["local_s_per_mib"].value == pytest.approx(0.004)
    assert fit["request_s"].value == pytest.approx(0.02)  # 10 − 6.98 − the 3 s sleep
    assert all(type(c.value) is float for c in fit.values())  # plain floats: the file is TOML


def test_process_fit_counts_the_start_from_the_pull_when_the_process_starts_during_the_download() -> None:
    """A large message: the SuperExec launches the ClientApp at "Receiving", before the objects are in, and
    the ClientApp's own pull then backs off until they are. Measured from "Received" (the old fit), such
    messages looked like fast starts and slow pulls; the fit must recover the same constants either way."""
    from fedbw.netmodel.flower import pull_behind

    costs = FlowerCosts()
    start, other, per_mib, objects = 1.4, 0.8, 0.004, 131
    launch = start + costs.superexec_poll_s / 2
    messages = []
    for i, (mib, download) in enumerate(((0.1, 0.05), (45.0, 3.0), (0.5, 0.1), (45.0, 6.0)) * 3):
        t_has = pull_behind(launch, 0.0, download, objects, costs)
        t_app = t_has + other + per_mib * mib
        messages.append({"model": "m", "client_id": 0, "launch_s": launch, "process_start_s": launch - download,
                         "flower_bytes_down": mib * MIB, "objects_down": objects,
                         "parts": {"clientapp_start_s": t_app - download}})
    fit = fit_process(messages, costs)
    assert fit["clientapp_start_s"].value == pytest.approx(start)
    assert fit["clientapp_other_s"].value == pytest.approx(other)
    assert fit["local_s_per_mib"].value == pytest.approx(per_mib)


def test_node_share_fit_recovers_the_share_of_the_download_cpu_that_delays_the_clientapp() -> None:
    """Shaped messages laid out by the model with a known share; messages whose download ended before
    the launch carry no information and are left out."""
    from fedbw.netmodel.contention import node_cpu_during_download_s
    from fedbw.netmodel.flower import pull_behind

    costs = dataclasses.replace(FlowerCosts(), hop_object_s=0.008, hop_s_per_mib=0.0065, local_s_per_mib=0.008)
    truth = dataclasses.replace(costs, node_download_share=0.45)
    launch, objects, mib = costs.clientapp_start_s + costs.superexec_poll_s / 2, 131, 44.6
    messages = []
    for download in (3.0, 3.6, 4.2, 0.5):
        delay = node_cpu_during_download_s(truth.node_download_share, truth.hop_cpu_s(objects, mib * MIB), 0.0,
                                           download, launch - costs.clientapp_start_s)
        t_app = (pull_behind(launch, 0.0, download, objects, costs) + costs.local_cpu_s(mib * MIB) + delay
                 + costs.clientapp_other_s)
        messages.append({"launch_s": launch, "process_start_s": launch - download, "objects_down": objects,
                         "flower_bytes_down": mib * MIB, "parts": {"clientapp_start_s": t_app - download}})
    fit = fit_node_share(messages, costs)["node_download_share"]
    assert fit.value == pytest.approx(0.45) and fit.samples == 3
    assert fit_node_share(messages[3:], costs) == {}  # no overlap: nothing to fit


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

    monkeypatch.setattr(measure, "calibrate", interrupted)
    target = tmp_path / "cal.toml"
    target.write_text("# earlier\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["calibrate", "--out", str(target)])
    assert res.exit_code == 130, res.output
    assert "no calibration written" in res.output and "rounds are kept" not in res.output
    assert target.read_text(encoding="utf-8") == "# earlier\n"


def test_concurrency_counts_the_other_clients_transfers_by_their_overlap() -> None:
    from fedbw.calibrate.server_share import concurrency, transfer_windows

    msgs = [{"client_id": 0, "t_receiving_s": 10.0, "t_down_s": 4.0, "t_sent_s": 30.0, "t_up_s": 10.0},
            {"client_id": 1, "t_receiving_s": 12.0, "t_down_s": 4.0, "t_sent_s": 40.0, "t_up_s": 5.0},
            {"client_id": 0, "t_receiving_s": None, "t_down_s": 1.0, "t_sent_s": 50.0, "t_up_s": 1.0}]
    windows = transfer_windows(msgs)
    assert windows[:2] == [(0, "down", 10.0, 14.0), (0, "up", 20.0, 30.0)] and windows[4] is None
    n = concurrency(windows)
    assert n[0] == n[2] == pytest.approx(1.5)  # half of each download overlaps the other's
    assert n[1] == 1.0 and n[3] == 1.0  # the uploads do not meet; a client's own transfers never count
    assert n[4] is None


def test_server_share_fit_recovers_the_superlinks_part_of_the_object_cpu() -> None:
    """Four clients whose transfers overlap wholly, laid out by the model with a known share over a
    one-client run that carries the same fixed offset the model lacks (the fit uses growth only)."""
    from fedbw.calibrate.server_share import fit_server_share
    from fedbw.netmodel.contention import hop_cpu_factor
    from fedbw.netmodel.objects import transfer_objects_s
    from fedbw.netmodel.transfer import ClientLink

    costs = dataclasses.replace(FlowerCosts(), hop_object_s=0.006, hop_s_per_mib=0.006)
    link = ClientLink(28.7, 287.0, 0.025)
    nbytes, objects, offset = 46.8e6, 131, 0.4

    def model(d: str, share: float, n: float) -> float:
        k = hop_cpu_factor(share, n)
        rate = link.down_bytes_per_s if d == "down" else link.up_bytes_per_s
        return transfer_objects_s(nbytes, objects, rate, link.rtt_s, 2, costs.hop_object_s * k,
                                  costs.hop_s_per_mib / MIB * k)

    def msg(cid: int, t0: float, share: float, n: float) -> dict:
        down, up = model("down", share, n) + offset, model("up", share, n) + offset
        return {"client_id": cid, "t_receiving_s": t0, "t_down_s": down, "t_sent_s": t0 + 20.0, "t_up_s": up,
                "flower_bytes_down": nbytes, "flower_bytes_up": nbytes, "objects_down": objects,
                "objects_up": objects}

    alone = [msg(0, 100.0 * r, 0.0, 1.0) for r in range(3)]
    together = [msg(c, 100.0 * r, 0.35, 4.0) for r in range(3) for c in range(4)]
    fit = fit_server_share(alone, together, costs, link)["server_share"]
    assert fit.value == pytest.approx(0.35, abs=0.005) and fit.samples == 24
    assert fit_server_share(alone, [msg(0, 0.0, 0.0, 1.0)], costs, link) == {}  # nothing overlapped


def test_download_round_trip_fit_recovers_the_requests_beyond_the_model() -> None:
    """Shaped downloads laid out by the model plus 6 round trips (one of them also met the push: +1.2 s);
    the median takes the six, and a link without round trips has nothing to fit."""
    from fedbw.calibrate.measure import fit_download_round_trips
    from fedbw.netmodel.objects import transfer_objects_s
    from fedbw.netmodel.transfer import ClientLink

    costs = dataclasses.replace(FlowerCosts(), hop_object_s=0.006, hop_s_per_mib=0.006, hop_message_s=0.0)
    link = ClientLink(28.7, 287.0, 0.025)
    nbytes, objects = 46.8e6, 131
    model = 2 * link.rtt_s + transfer_objects_s(nbytes, objects, link.down_bytes_per_s, link.rtt_s, 2,
                                                costs.hop_object_s, costs.hop_s_per_mib / MIB)
    msgs = [{"objects_down": objects, "flower_bytes_down": nbytes, "t_down_s": model + 6 * link.rtt_s + extra}
            for extra in (0.0, 0.0, 0.0, 1.2)]
    fit = fit_download_round_trips(msgs, costs, link)["download_round_trips"]
    assert fit.value == pytest.approx(6.0) and fit.samples == 4
    assert fit_download_round_trips(msgs, costs, ClientLink(28.7, 287.0, 0.0)) == {}
