from pathlib import Path

import pytest

from fedbw.config import ExperimentConfig, apply_override, config_from_dict, load_config
from fedbw.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "experiments").glob("*.toml")
                                         if "\n[study]" not in p.read_text()),  # studies: tests/test_study.py
                         ids=lambda p: p.name)
def test_shipped_experiments_validate(path):
    assert isinstance(load_config(path), ExperimentConfig)


def test_defaults_are_valid():
    cfg = config_from_dict({})
    assert cfg.network.mix[0].profile == "home-30"
    assert cfg.clients.per_round <= cfg.clients.total


def test_network_profile_shorthand():
    cfg = config_from_dict({"network": {"profile": "home-50"}})
    assert [(m.profile, m.share) for m in cfg.network.mix] == [("home-50", 1.0)]


@pytest.mark.parametrize("data,needle", [
    ({"clients": {"totl": 3}}, "clients.totl: unknown key"),
    ({"training": {"rounds": "many"}}, "training.rounds"),
    ({"training": {"rounds": 0}}, "training.rounds"),
    ({"clients": {"total": 3, "per_round": 4}}, "cannot exceed clients.total"),
    ({"network": {"mix": [{"profile": "home-30", "share": -1}]}}, "network.mix.0.share"),
    ({"network": {"overrides": [{"client": 0, "up_mbps": -5}]}}, "network.overrides.0.up_mbps"),
    ({"network": {"overrides": [{"client": 99}]}}, "client 99"),
    ({"privacy": {"secagg": {"enabled": True, "num_shares": 3, "reconstruction_threshold": 3}}},
     "reconstruction_threshold"),
    ({"privacy": {"secagg": {"enabled": True, "num_shares": 8}}}, "num_shares"),
    ({"privacy": {"secagg": {"enabled": True}}, "compression": {"codec": "int8"}}, "do not compose"),
    ({"network": {"profile": "home-31"}}, "home-30"),
    ({"model": {"name": "resnet5"}}, "model.name"),
    ({"model": {"name": "llm-7b"}}, "no module fedbw can train"),
    ({"engine": "fast"}, "engine"),
    ({"datacenter": {"fabrics": ["nvlink9"]}}, "datacenter.fabrics[0]"),
])
def test_bad_configs_name_the_key(data, needle):
    with pytest.raises(ConfigError) as info:
        config_from_dict(data)
    assert needle in str(info.value)
    assert info.value.exit_code == 2


def test_llm_allowed_for_estimate():
    assert config_from_dict({"engine": "estimate", "model": {"name": "llm-7b"}}).model.name == "llm-7b"


def test_overrides_use_toml_values():
    d: dict = {}
    apply_override(d, "clients.total=20")
    apply_override(d, "network.profile=home-50")
    apply_override(d, 'model.name="resnet18"')
    apply_override(d, "privacy.secagg.enabled=true")
    assert d == {"clients": {"total": 20}, "network": {"profile": "home-50"}, "model": {"name": "resnet18"},
                 "privacy": {"secagg": {"enabled": True}}}
    for bad in ("clients.total", "=3", "a..b=1"):
        with pytest.raises(ConfigError):
            apply_override({}, bad)


def test_load_errors(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[clients\ntotal = 3\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="directory"):
        load_config(tmp_path)


def test_setting_profile_replaces_a_configured_mix():
    base = {"network": {"mix": [{"profile": "home-30"}, {"profile": "home-80"}]}}
    cfg = config_from_dict(base, ["network.profile=home-50"])
    assert [m.profile for m in cfg.network.mix] == ["home-50"]
