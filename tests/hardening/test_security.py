"""Security: the shaper listens on loopback unless told, TLS passes through it untouched, and SuperNode
authentication on in an emulate run (TLS, a registered key pair per SuperNode; a stranger refused).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import ssl
import sys
import time
from pathlib import Path

import pytest

from fedbw.engines.emulate.flower import FlowerDeployment
from fedbw.engines.emulate.ports import LOOPBACK, free_ports
from fedbw.engines.emulate.security import SuperNodeKey, make_supernode_key, make_tls
from fedbw.errors import FedbwError
from fedbw.processes import Supervisor
from fedbw.shaper import ClientRoute, LinkSpec, Shaper
from fedbw.shaper.cli_support import consecutive_routes, routes_from_mapping
from tests.hardening.runs import QUIET_ENV
from tests.hardening.test_soak import secrets_in
from tests.shaper.helpers import run


def test_shaper_listens_on_loopback_unless_told(reliability) -> None:
    link = LinkSpec(30, 30)
    from_map = routes_from_mapping({"upstream": "127.0.0.1:9", "up_mbps": 30, "down_mbps": 30,
                                  "client": [{"id": "a"}, {"id": "b", "port": 0}]})
    from_flags = consecutive_routes("127.0.0.1:0", "127.0.0.1:9", 1, link)
    told = [ClientRoute("other-loopback", "127.0.0.2", 0, "127.0.0.1", 9, link)]

    async def bound(routes: list[ClientRoute]) -> set[str]:
        async with Shaper(routes) as shaper:
            return {sock.getsockname()[0] for c in shaper.clients.values() for sock in c.server.sockets}

    assert run(lambda: bound(from_map)) == {"127.0.0.1"}
    assert run(lambda: bound(from_flags)) == {"127.0.0.1"}
    assert run(lambda: bound(told)) == {"127.0.0.2"}  # an address it is told is used as told
    assert LOOPBACK == "127.0.0.1"  # every route emulate builds listens there
    with pytest.raises(FedbwError, match="not loopback; pass --allow-non-loopback"):
        Shaper([ClientRoute("wide", "0.0.0.0", 0, "127.0.0.1", 9, link)])  # refused before any socket exists
    reliability.area = "security"
    reliability.tried = "where the shaper listens: a client map without hosts, `--listen`, emulate's routes, 0.0.0.0"
    reliability.kept = "127.0.0.1 unless an address is given; a non-loopback one refused without --allow-non-loopback"


async def _hash_reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The TLS server's side: answer one upload (8-byte length, payload) with its SHA-256."""
    size = int.from_bytes(await reader.readexactly(8), "big")
    writer.write(hashlib.sha256(await reader.readexactly(size)).digest())
    await writer.drain()
    writer.close()


def test_tls_passes_through_the_shaper_untouched(tmp_path: Path, reliability) -> None:
    files = make_tls(tmp_path / "tls", [LOOPBACK])  # emulate's own throw-away CA (cryptography)
    server_der = ssl.PEM_cert_to_DER_cert(files.cert.read_text())
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(files.cert, files.key)
    client_ctx = ssl.create_default_context(cafile=str(files.ca))  # verifies the chain and 127.0.0.1
    payload = os.urandom(2_000_000)
    mbps = 40.0

    async def main() -> tuple[bytes, bytes | None, float, dict]:
        server = await asyncio.start_server(_hash_reply, "127.0.0.1", 0, ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        async with server, Shaper([ClientRoute("c", "127.0.0.1", 0, "127.0.0.1", port, LinkSpec(mbps, 1000))]) as shaper:
            t0 = time.perf_counter()
            reader, writer = await asyncio.open_connection("127.0.0.1", shaper.ports["c"], ssl=client_ctx,
                                                           server_hostname="127.0.0.1")
            peer = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
            writer.write(len(payload).to_bytes(8, "big") + payload)
            await writer.drain()
            digest = await reader.readexactly(32)
            elapsed = time.perf_counter() - t0
            writer.close()
            await asyncio.sleep(0.05)
            return digest, peer, elapsed, shaper.snapshot()

    digest, peer, elapsed, snap = run(main)
    assert digest == hashlib.sha256(payload).digest()  # every byte arrived, in order, decryptable
    assert peer == server_der  # the client talked TLS to the server itself, not to the shaper
    up = snap["clients"]["c"]["up"]
    assert up["bytes_out"] == up["bytes_in"] >= len(payload)  # ciphertext forwarded, byte for byte
    serialization_s = up["bytes_out"] * 8 / (mbps * 1e6)
    assert elapsed >= 0.97 * serialization_s  # and shaped like any other traffic
    reliability.area = "security"
    reliability.tried = f"TLS 1.3 (certificates made by the test with `cryptography`) through a {mbps:g} Mbps link"
    reliability.kept = ("the server's own certificate seen by the client; payload hash equal; ciphertext forwarded "
                        "byte for byte and shaped")
    reliability.measure(tls_overhead_pct=round(100 * (up["bytes_in"] / len(payload) - 1), 2),
                        link_time_s=round(serialization_s, 3), handshake_and_transfer_s=round(elapsed, 3))


#: A tiny NumPy FedAvg app fedbw did not write (tests/engines/fixtures).
FIXTURE_APP = Path(__file__).resolve().parents[1] / "engines" / "fixtures" / "numpy_app"


def _key_lines(key_file: Path) -> list[bytes]:
    """The base64 lines of a PEM/OpenSSH private key file: what a log could leak without the header."""
    return [ln.encode() for ln in key_file.read_text().splitlines() if not ln.startswith("-----")]


def _leaks(root: Path, lines: list[bytes]) -> list[str]:
    """Files under ``root`` holding the key (joined, as a repr would print it, or any one of its lines)
    or anything shaped like a private key or token."""
    found = set(secrets_in(root, b"".join(lines)))
    found |= {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
              and any(line in p.read_bytes() for line in lines)}
    return sorted(found)


def _recording_keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[SuperNodeKey, list[bytes]]]:
    """Every SuperNode key pair the run makes, with its private key's lines read while the run holds it."""
    from fedbw.engines.emulate import flower

    made: dict[str, tuple[SuperNodeKey, list[bytes]]] = {}

    def record(directory: Path, name: str) -> SuperNodeKey:
        key = make_supernode_key(directory, name)
        made[name] = (key, _key_lines(key.private))
        return key

    monkeypatch.setattr(flower, "make_supernode_key", record)
    return made


@pytest.mark.slow
def test_supernode_authentication_in_an_emulate_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    reliability) -> None:
    """SuperNode authentication and TLS on in an emulate run (2 clients, 1 round)."""
    from fedbw.runner import run_app

    reliability.area = "security"
    reliability.tried = ("SuperNode authentication in an emulate run (`[emulate] tls = true`, `supernode_auth = "
                         "true`): 2 SuperNodes, 1 round of a NumPy FedAvg app through shaped home-80 links")
    made = _recording_keys(monkeypatch)
    out = tmp_path / "run"
    t0 = time.perf_counter()
    run = run_app(FIXTURE_APP, 2, "home-80", engine="emulate", rounds=1, out_dir=out, tls=True, supernode_auth=True)
    wall_s = time.perf_counter() - t0
    assert [r.round for r in run.rounds] == [1] and sorted(c.client_id for c in run.clients) == [0, 1]
    assert all(c.bytes_up > 0 and c.bytes_down > 0 for c in run.clients)  # records complete, bytes measured
    superlink = (out / "emulate-logs" / "superlink.log").read_text()
    assert "SuperNode authentication is disabled" not in superlink  # Flower's warning when auth is off
    assert "https://127.0.0.1" in superlink  # TLS on the loopback SuperLink
    registered = re.findall(r"\[ControlServicer\.RegisterNode\] Created node_id=(\d+)", superlink)
    activated = re.findall(r"\[Fleet\.ActivateNode\] Activated node_id=(\d+)", superlink)
    assert len(set(registered)) == 2 and sorted(activated) == sorted(registered)  # each registered, then active
    # the keys lived in the run's work directory only: gone with it, and in no file the run kept
    assert sorted(made) == ["client-0", "client-1"]
    for key, lines in made.values():
        assert not key.private.exists() and not key.public.exists() and out not in key.private.parents
        assert len(lines) >= 4 and _leaks(out, lines) == []  # neither its bytes nor any PEM private key
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 5  # logs were kept: there was something to search
    lines = made["client-0"][1]
    (tmp_path / "planted").mkdir()
    (tmp_path / "planted" / "a.log").write_bytes(b"INFO " + lines[2] + b"\n")  # one line of a key, no header
    (tmp_path / "planted" / "b.log").write_bytes(repr(b"".join(lines)).encode())
    assert _leaks(tmp_path / "planted", lines) == ["a.log", "b.log"]  # the search finds what it looks for
    reliability.kept = ("the SuperLink ran TLS with `--enable-supernode-auth`; both SuperNodes' public keys "
                        "registered through the Control API, each SuperNode activated with its own private key; "
                        f"the round's records complete; neither private key nor any PEM private key in the run "
                        f"directory ({len(files)} files, logs included); the keys removed with the work directory")
    reliability.measure(wall_s=round(wall_s, 1), startup_s=round(run.result.startup_s, 1),
                        round_time_s=round(run.rounds[0].round_time_s, 2))


@pytest.mark.slow
def test_a_supernode_whose_key_was_not_registered_is_refused(tmp_path: Path, reliability) -> None:
    """A SuperNode with a key pair the SuperLink never registered, beside one it did register."""
    reliability.area = "security"
    reliability.tried = ("a SuperNode with a key pair of its own that was never registered, on emulate's "
                         "SuperLink with TLS and `--enable-supernode-auth`, beside a registered one")
    tls = make_tls(tmp_path / "tls", [LOOPBACK])
    env = {**QUIET_ENV, "FEDBW_TEST": "unregistered-supernode"}
    with Supervisor() as sup:
        dep = FlowerDeployment(sup, tmp_path / "work", env, tls=tls, supernode_auth=True)
        port = dep.start_superlink()
        registered = dep.start_supernode("client-0", port, {"partition-id": 0, "num-partitions": 1})
        dep.wait_supernodes_ready(180.0)
        stranger = make_supernode_key(tmp_path / "stranger", "stranger")  # made, never registered
        argv = [str(Path(sys.executable).parent / "flower-supernode"), "--root-certificates", str(tls.ca),
                "--auth-supernode-private-key", str(stranger.private), "--superlink", f"{LOOPBACK}:{port}",
                "--port", str(free_ports(1)[0])]
        refused = sup.start("stranger", argv, dep.env, tmp_path / "stranger.log")
        code = refused.wait(180.0)
        refused.expected_exit = True
        assert registered.alive  # the registered SuperNode is still connected
        dep.close()
    log = (tmp_path / "stranger.log").read_text()
    assert code != 0 and "Failed to initialize the connection to the SuperLink" in log and "SuperNode ID" not in log
    superlink = (tmp_path / "work" / "logs" / "superlink.log").read_text()
    assert superlink.count("Activated node_id=") == 1  # only the registered one
    reason = next((ln.split("]", 1)[-1].strip() for ln in log.splitlines() if "[code:" in ln), "")
    reliability.kept = (f"refused: the stranger exited with code {code} before it ever got a node id "
                        f"(\"{reason[:120]}\"); the registered SuperNode stayed connected")
