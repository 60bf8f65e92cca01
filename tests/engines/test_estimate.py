
import pytest

from fedbw.compare import estimate_report, run_sweep
from fedbw.config import config_from_dict
from fedbw.engines.estimate import estimate_fabrics, run_estimate
from fedbw.plan import build_plan


def test_estimate_run_writes_one_record_per_client_and_round():
    plan = build_plan(config_from_dict({"engine": "estimate", "clients": {"total": 6, "per_round": 3},
                                        "training": {"rounds": 2}}))
    result = run_estimate(plan, "t")
    assert len(result.rounds) == 2 and len(result.clients) == 6
    r1 = result.rounds[0]
    assert r1.round_time_s == pytest.approx(r1.stage_times_s["fit"])
    assert {c.client_id for c in result.clients if c.round == 1} == set(plan.sampled_clients(1))


def test_resnet50_home30_round_by_hand():
    rep = estimate_report(None, model="resnet50", profiles=["home-30"], fabrics=["ib-ndr400"], ranks=8,
                          overrides=['framework="none"'])
    (p,) = rep.profiles
    payload_up = 30e6 * 1448 / 1514
    # upload ≈ 102.2 MB float32 at the 30 Mbps line's TCP payload rate, plus half the 25 ms RTT
    assert p.t_up_s == pytest.approx(p.bytes_up_per_client * 8 / payload_up + 0.0125)
    assert p.bytes_up_per_client == pytest.approx(4 * 25_557_032, rel=0.01)
    assert p.bandwidth_bound
    (f,) = rep.fabrics
    assert f.busbw_gbps == pytest.approx(47, rel=0.02)
    assert rep.ratio(f) > 1000


def test_stock_secagg_costs_twice_the_upload():
    plain = estimate_report(None, model="resnet18", profiles=["home-50"]).profiles[0]
    stock = estimate_report(None, model="resnet18", profiles=["home-50"], secagg="stock").profiles[0]
    packed = estimate_report(None, model="resnet18", profiles=["home-50"], secagg="packed").profiles[0]
    assert stock.bytes_up_per_client / plain.bytes_up_per_client == pytest.approx(2.0, rel=0.01)
    assert packed.bytes_up_per_client / plain.bytes_up_per_client <= 1.02
    assert stock.round_time_s > packed.round_time_s > plain.round_time_s


def test_fabric_ordering():
    rows = {r.fabric: r for r in estimate_fabrics(124_439_808, ["nvlink4", "ib-ndr400", "eth-1g"], 8)}
    assert rows["nvlink4"].time_s < rows["ib-ndr400"].time_s < rows["eth-1g"].time_s


def test_hundred_point_sweep_answers_every_point(tmp_path):
    """A 100-point sweep returns one row per point, the link time shortening as the uplink grows.

    How fast it answers is benchmarks/estimate.py's job (a timed unit test would flake on a shared host).
    """
    cfg = tmp_path / "c.toml"
    cfg.write_text('engine = "estimate"\n[model]\nname = "resnet50"\n')
    rows = run_sweep(cfg, "up_mbps", [10 + i for i in range(100)])
    assert len(rows) == 100
    # the link time falls with every step of the uplink; the whole round only overall: laid on Flower's
    # poll grids, it is a step function of the rate, and not a monotone one
    comm = [r.comm_time_s for r in rows]
    assert all(a > b for a, b in zip(comm, comm[1:]))
    assert rows[0].round_time_s > rows[-1].round_time_s


def test_sweep_over_config_key(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('engine = "estimate"\n[model]\nname = "resnet18"\n')
    rows = run_sweep(cfg, "compression.codec", ["none", "fp16", "int8"])
    ups = [r.bytes_up_per_client for r in rows]
    assert ups[1] == pytest.approx(ups[0] / 2, rel=0.01) and ups[2] == pytest.approx(ups[0] / 4, rel=0.01)


def test_each_profiles_round_carries_its_interval_and_the_table_shows_it() -> None:
    """With Flower's costs the round has a spread (phases, the constants' intervals): `fedbw estimate`'s
    profile table shows it beside the expected round; a links-only round has none."""
    from rich.console import Console

    from fedbw.report.tables import profile_table

    (p,) = estimate_report(None, model="small-cnn", profiles=["home-50"]).profiles
    assert p.round_interval_s is not None
    low, high = p.round_interval_s
    assert low <= high and low < p.round_time_s * 1.5 and high > p.round_time_s / 1.5
    console = Console(width=160, record=True)
    console.print(profile_table([p], "t"))
    text = console.export_text()
    assert f"{low:.2f}–{high:.2f}]" in text  # the row's interval, in its unit (seconds here)
    (bare,) = estimate_report(None, model="small-cnn", profiles=["home-50"], overrides=['framework="none"']).profiles
    assert bare.round_interval_s is None
