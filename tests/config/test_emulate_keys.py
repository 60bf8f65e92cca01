"""``[emulate] hosts``, ``tls`` and ``supernode_auth``: checked by the config, settable from a file or
``--set``, overridden by ``fedbw run --hosts``, and carried to the emulate engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fedbw.config import config_from_dict, load_config
from fedbw.errors import ConfigError, RunError

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "experiments" / "quickstart.toml"


def test_defaults_are_loopback_without_tls_or_auth() -> None:
    emulate = config_from_dict({}).emulate
    assert (emulate.hosts, emulate.tls, emulate.supernode_auth) == ("loopback", False, False)


def test_a_file_and_set_select_them(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('engine = "emulate"\n[emulate]\nhosts = "netns"\nsupernode_auth = true\n', encoding="utf-8")
    cfg = load_config(path)
    assert cfg.emulate.hosts == "netns" and cfg.emulate.supernode_auth and not cfg.emulate.tls  # netns: TLS anyway
    cfg = load_config(path, ["emulate.hosts=loopback", "emulate.tls=true"])
    assert cfg.emulate.hosts == "loopback" and cfg.emulate.tls


@pytest.mark.parametrize("emulate, message", [
    ({"hosts": "kubernetes"}, "emulate.hosts: Input should be 'loopback' or 'netns'"),
    ({"supernode_auth": True}, "supernode_auth needs TLS"),
    ({"supernode_auth": True, "hosts": "loopback", "tls": False}, "set emulate.tls = true"),
])
def test_bad_values_name_the_key(emulate: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict({"emulate": emulate})


def _capture_engine(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """emulate_app replaced by a recorder that stops the run before any process starts."""
    from fedbw.engines.emulate import run

    seen: dict[str, Any] = {}

    def fake(*args: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        raise RunError("stopped by the test")

    monkeypatch.setattr(run, "emulate_app", fake)
    return seen


def _run(*args: str, tmp_path: Path) -> Any:
    from typer.testing import CliRunner

    from fedbw.cli import app

    return CliRunner().invoke(app, ["run", str(QUICKSTART), "--engine", "emulate", "--set",
                                    f"output_dir={str(tmp_path)!r}".replace("'", '"'), *args])


def test_the_config_keys_reach_the_engine_and_the_cli_option_overrides(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    from fedbw.engines.emulate.hosts import NetnsHosts

    seen = _capture_engine(monkeypatch)
    res = _run("--set", "emulate.hosts=netns", "--set", "emulate.supernode_auth=true", tmp_path=tmp_path)
    assert "stopped by the test" in res.output, res.output
    assert seen["hosts"] == NetnsHosts() and seen["supernode_auth"] is True and seen["tls"] is False
    seen.clear()
    res = _run("--set", "emulate.hosts=netns", "--hosts", "loopback", "--set", "emulate.tls=true", tmp_path=tmp_path)
    assert "stopped by the test" in res.output, res.output
    assert seen["hosts"] is None and seen["tls"] is True and seen["supernode_auth"] is False


def test_netns_from_the_config_without_namespaces_is_the_clear_error(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setattr("fedbw.netns.unavailable", lambda: "not root")
    res = _run("--set", "emulate.hosts=netns", tmp_path=tmp_path)
    assert res.exit_code == 2, res.output
    assert "emulate across hosts needs network namespaces: not root" in res.output and "Traceback" not in res.output


def test_hosts_option_needs_the_emulate_engine_and_a_known_value(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from fedbw.cli import app

    res = CliRunner().invoke(app, ["run", str(QUICKSTART), "--engine", "estimate", "--hosts", "netns"])
    assert res.exit_code == 2 and "--hosts places the emulate engine's processes" in res.output
    res = _run("--hosts", "moon", tmp_path=tmp_path)
    assert res.exit_code == 2 and "emulate.hosts" in res.output and "Traceback" not in res.output
