"""fedbw.flower_limits: Flower's object-push session against a reply's largest object, which replies a real
deployment loses, and the warning before a run."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from fedbw.cli import app
from fedbw.config import config_from_dict
from fedbw.flower_limits import OBJECT_PUSH_SESSION_TTL_S, largest_object_up, push_gap_s
from fedbw.netmodel.payload import ARRAY_CHUNK_BYTES, round_exchanges
from fedbw.netmodel.transfer import mbps_to_bytes_per_s
from fedbw.plan import build_plan

RESNET18 = 11_689_512


def _masked(params: int = RESNET18):
    return next(ex for ex in round_exchanges(params, 62, 1, secagg="stock", num_neighbours=3)
                if ex.stage == "collect_masked_vectors")


def test_the_masked_vector_is_one_object_and_its_push_is_its_own_time_on_the_link():
    ex = _masked()
    assert largest_object_up(ex) == ex.bytes_up > 2 * 4 * RESNET18  # int64 values: one unchunked object
    rate = mbps_to_bytes_per_s(30.0)
    assert push_gap_s(ex, rate) == pytest.approx(ex.bytes_up / rate)


def test_a_plain_update_pushes_its_chunks_two_at_a_time():
    (fit,) = round_exchanges(RESNET18, 62, 1)
    assert largest_object_up(fit) == ARRAY_CHUNK_BYTES
    assert push_gap_s(fit, 1e6) == pytest.approx(2 * ARRAY_CHUNK_BYTES / 1e6)
    (tiny,) = round_exchanges(1_000, 2, 1)  # one small object: nothing beside it larger than the rest
    assert push_gap_s(tiny, 1e3) == pytest.approx(tiny.bytes_up / 1e3)


def _plan(secagg: bool, up_mbps: float, total: int = 4):
    return build_plan(config_from_dict({
        "engine": "estimate", "model": {"name": "resnet18"}, "clients": {"total": total, "per_round": total},
        "network": {"profile": "home-30", "overrides": [{"client": 0, "up_mbps": up_mbps}]},
        "privacy": {"secagg": {"enabled": secagg}}}))


def test_the_plan_names_the_replies_flower_would_drop_on_a_slow_uplink():
    # 93.6 MB in one object needs about 93.6e6 * 8 / 180 s = 4.2 Mbps of payload
    (sentence,) = _plan(True, 3.0).lost_replies()
    assert sentence.startswith("1 of 4 clients' collect_masked_vectors reply") and "180 s" in sentence
    assert _plan(True, 6.0).lost_replies() == []
    assert _plan(False, 3.0).lost_replies() == []  # plain: 5 MiB chunks, two at a time: ~28 s at 3 Mbps
    assert OBJECT_PUSH_SESSION_TTL_S == 180.0


def test_validate_warns_before_a_run(tmp_path):
    cfg = tmp_path / "slow.toml"
    cfg.write_text('[model]\nname = "resnet18"\n[clients]\ntotal = 3\nper_round = 3\n[privacy.secagg]\nenabled = true\n'
                   '[network]\nprofile = "home-30"\noverrides = [{client = 1, up_mbps = 2.0}]\n')
    res = CliRunner().invoke(app, ["validate", str(cfg)])
    assert res.exit_code == 0, res.output
    assert "warning:" in res.output and "would lose" in res.output


def test_run_warns_after_its_table_and_keeps_its_records(tmp_path):
    cfg = tmp_path / "slow.toml"
    cfg.write_text('engine = "estimate"\n[model]\nname = "resnet18"\n[clients]\ntotal = 3\nper_round = 3\n'
                   '[training]\nrounds = 1\n[privacy.secagg]\nenabled = true\n'
                   '[network]\nprofile = "home-30"\noverrides = [{client = 1, up_mbps = 2.0}]\n')
    res = CliRunner().invoke(app, ["run", str(cfg), "--set", f'output_dir="{tmp_path / "runs"}"'])
    assert res.exit_code == 0, res.output
    assert "1 of 3 clients' collect_masked_vectors reply" in res.output and "would lose" in res.output
    assert list((tmp_path / "runs").glob("*/records.jsonl"))


def test_the_limits_are_not_part_of_the_model_version():
    from fedbw.netmodel.version import model_files

    assert "flower_limits.py" not in {p.name for p in model_files()}


def test_an_emulation_is_warned_before_it_starts(tmp_path, monkeypatch):
    import fedbw.runner
    from fedbw.errors import ConfigError

    def refuse(cfg, progress=None):
        raise ConfigError("not started in this test")

    monkeypatch.setattr(fedbw.runner, "run_experiment", refuse)
    cfg = tmp_path / "slow.toml"
    cfg.write_text('engine = "emulate"\n[model]\nname = "resnet18"\n[clients]\ntotal = 3\nper_round = 3\n'
                   '[privacy.secagg]\nenabled = true\n'
                   '[network]\nprofile = "home-30"\noverrides = [{client = 1, up_mbps = 2.0}]\n')
    res = CliRunner().invoke(app, ["run", str(cfg)])
    assert res.exit_code == 2
    assert res.output.index("would lose") < res.output.index("not started in this test")


SLOW_SECAGG = ('engine = "estimate"\n[model]\nname = "resnet18"\n[clients]\ntotal = 3\nper_round = 3\n'
               '[training]\nrounds = 1\n[privacy.secagg]\nenabled = true\n[network]\nprofile = "home-30"\n')


def test_an_analytic_sweep_warns_of_the_values_whose_replies_flower_would_drop(tmp_path):
    """--param up_mbps: a value below ~4.2 Mbps cannot push ResNet-18's masked vector in one session."""
    cfg = tmp_path / "s.toml"
    cfg.write_text(SLOW_SECAGG)
    res = CliRunner().invoke(app, ["sweep", str(cfg), "--param", "up_mbps", "--values", "2,30"])
    assert res.exit_code == 0, res.output
    assert "up_mbps = 2: 3 of 3 clients' collect_masked_vectors reply" in res.output
    assert "up_mbps = 30" not in res.output


def test_a_grid_sweep_warns_of_its_points_before_they_run(tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text(SLOW_SECAGG.replace('profile = "home-30"\n',
                                       'profile = "home-30"\noverrides = [{client = 1, up_mbps = 2.0}]\n'))
    res = CliRunner().invoke(app, ["sweep", str(cfg), "--grid", "privacy.secagg.enabled=false,true",
                                   "--set", f'output_dir="{tmp_path / "runs"}"', "--quiet"])
    assert res.exit_code == 0, res.output
    assert "sweep point 2 (true): 1 of 3 clients' collect_masked_vectors reply" in res.output
    assert "sweep point 1" not in res.output
