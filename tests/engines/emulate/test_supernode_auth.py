"""TLS and SuperNode authentication in emulate's federation (fedbw/engines/emulate/security.py, flower.py),
without starting Flower: the keys are what Flower 1.42's own loaders accept, the SuperLink and SuperNodes
get the flags Flower documents, each public key is registered before its SuperNode starts, and bad
combinations are refused before any process starts. The runs themselves: tests/hardening/test_security.py."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from fedbw.engines.emulate.clients import clients_for_profile
from fedbw.engines.emulate.flower import FlowerDeployment
from fedbw.engines.emulate.hosts import NetnsHosts
from fedbw.engines.emulate.security import KEYS_DIR, make_supernode_key, make_tls
from fedbw.errors import ConfigError, RunError
from fedbw.processes import Supervisor

FIXTURE_APP = Path(__file__).parent.parent / "fixtures" / "numpy_app"


def test_supernode_keys_are_what_flowers_own_loaders_accept(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key
    from flwr.cli.supernode.register import try_load_public_key
    from flwr.supercore.primitives.asymmetric import public_key_to_bytes, uses_nist_ec_curve

    key = make_supernode_key(tmp_path / "keys", "client-0")
    private = load_ssh_private_key(key.private.read_bytes(), None)  # as flower-supernode reads it
    assert isinstance(private, ec.EllipticCurvePrivateKey) and uses_nist_ec_curve(private.public_key())
    assert private.curve.name == "secp384r1"
    # `flwr supernode register KEY.pub` sends exactly the private key's public half
    assert try_load_public_key(key.public) == public_key_to_bytes(private.public_key())
    assert stat.S_IMODE(key.private.stat().st_mode) == 0o600
    assert stat.S_IMODE(make_tls(tmp_path / "tls", ["127.0.0.1"]).key.stat().st_mode) == 0o600
    other = make_supernode_key(tmp_path / "keys", "client-1")
    assert other.public.read_bytes() != key.public.read_bytes()  # a key pair of its own per SuperNode


class _Control:
    """The SuperLink's Control API as far as registration goes: records every request."""

    def __init__(self, node_id: int = 7, refuse: bool = False) -> None:
        self.requests: list[Any] = []
        self.node_id, self.refuse = node_id, refuse

    def RegisterNode(self, request: Any) -> Any:  # noqa: N802 - Flower's stub's name
        from flwr.proto.control_pb2 import RegisterNodeResponse  # pylint: disable=E0611

        if self.refuse:
            raise OSError("connection refused")
        self.requests.append(request)
        return RegisterNodeResponse(node_id=self.node_id)


def _deployment(tmp_path: Path, control: _Control, **kwargs: Any) -> FlowerDeployment:
    dep = FlowerDeployment(Supervisor(), tmp_path / "work", **kwargs)
    dep._control = control  # noqa: SLF001 - the client that _control_call hands to each call
    dep.superlink_port = 9
    return dep


def test_with_auth_the_superlink_requires_it_and_each_supernode_is_registered_before_it_starts(tmp_path: Path) -> None:
    from flwr.cli.supernode.register import try_load_public_key

    tls = make_tls(tmp_path / "tls", ["127.0.0.1"])
    control = _Control()
    dep = _deployment(tmp_path, control, tls=tls, supernode_auth=True)
    link_args = dep.superlink_security_args()
    assert "--insecure" not in link_args and "--enable-supernode-auth" in link_args
    assert link_args[link_args.index("--ssl-certfile") + 1] == str(tls.cert)
    args = dep.supernode_security_args("client-0")
    assert args[:2] == ["--root-certificates", str(tls.ca)]
    key_path = Path(args[args.index("--auth-supernode-private-key") + 1])
    assert key_path.parent == tmp_path / "work" / KEYS_DIR  # in the work directory the run removes
    (request,) = control.requests
    assert request.public_key == try_load_public_key(dep.keys["client-0"].public) and request.name == "client-0"
    dep._write_connection(9092)  # noqa: SLF001 - the flwr CLI checks the run's CA too
    written = (tmp_path / "work" / "flwr-home" / "config.toml").read_text()
    assert f'root-certificates = "{tls.ca}"' in written and "insecure" not in written


def test_tls_without_auth_and_the_insecure_default(tmp_path: Path) -> None:
    tls = make_tls(tmp_path / "tls", ["127.0.0.1"])
    control = _Control()
    dep = _deployment(tmp_path, control, tls=tls)
    assert "--enable-supernode-auth" not in dep.superlink_security_args()
    assert dep.supernode_security_args("client-0") == ["--root-certificates", str(tls.ca)]
    assert control.requests == [] and not (tmp_path / "work" / KEYS_DIR).exists()
    plain = _deployment(tmp_path, control)
    assert plain.superlink_security_args() == ["--insecure"] == plain.supernode_security_args("client-0")


def test_a_refused_registration_is_one_line(tmp_path: Path) -> None:
    dep = _deployment(tmp_path, _Control(refuse=True), tls=make_tls(tmp_path / "tls", ["127.0.0.1"]),
                      supernode_auth=True)
    with pytest.raises(RunError, match="refused to register SuperNode client-0's public key: OSError"):
        dep.supernode_security_args("client-0")


def test_auth_without_tls_is_refused_before_any_process_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fedbw.engines.emulate import federation

    with pytest.raises(ConfigError, match="supernode_auth needs TLS"):
        FlowerDeployment(Supervisor(), tmp_path / "work", supernode_auth=True)
    monkeypatch.setattr(federation, "Supervisor", lambda: pytest.fail("a process was about to start"))
    with pytest.raises(ConfigError, match="set emulate.tls = true"):
        federation.emulate_app(FIXTURE_APP, clients_for_profile(2, "home-80"), supernode_auth=True)
    with pytest.raises(ConfigError, match="supernode_auth needs TLS"):
        import contextlib

        with contextlib.ExitStack() as stack:
            monkeypatch.setattr("fedbw.netns.unavailable", lambda: None)
            NetnsHosts(tls=False, supernode_auth=True).open(stack, [0], tmp_path)


def test_cli_flags_reach_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from fedbw.cli import app
    from fedbw.engines.emulate import federation, foreign

    seen: dict[str, Any] = {}

    def fake_emulate_app(*args: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        raise RunError("stopped by the test")

    monkeypatch.setattr(foreign, "emulate_app", fake_emulate_app)
    assert federation.emulate_app is not fake_emulate_app
    res = CliRunner().invoke(app, ["emulate", "--app", str(FIXTURE_APP), "--tls", "--supernode-auth"])
    assert res.exit_code == 1 and "stopped by the test" in res.output
    assert seen["tls"] is True and seen["supernode_auth"] is True and seen["hosts"] is None
    res = CliRunner().invoke(app, ["emulate", "--app", str(FIXTURE_APP), "--supernode-auth"])
    assert res.exit_code == 2 and "supernode_auth needs TLS" in res.output and "Traceback" not in res.output
