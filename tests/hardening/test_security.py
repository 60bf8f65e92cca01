"""Security: the shaper listens on loopback unless told, TLS passes through it untouched, and what
Flower 1.42 allows for SuperNode authentication in emulate's arrangement (and why it is not on).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedbw.engines.emulate.hosts import make_tls
from fedbw.engines.emulate.ports import LOOPBACK
from fedbw.errors import FedbwError
from fedbw.processes import Supervisor
from fedbw.shaper import ClientRoute, LinkSpec, Shaper
from fedbw.shaper.cli_support import consecutive_routes, routes_from_mapping
from tests.hardening.runs import QUIET_ENV
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


def _superlink_argv(args: list[str]) -> list[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return [str(Path(sys.executable).parent / "flower-superlink"), "--host", "127.0.0.1", "--port", str(port),
            "--disable-runtime-dependency-installation", *args]


@pytest.mark.slow
def test_supernode_authentication_needs_tls_which_the_loopback_federation_does_not_run(tmp_path: Path,
                                                                                       reliability) -> None:
    """Flower 1.42 refuses SuperNode auth without TLS; with TLS its SuperLink starts with auth on. emulate's
    loopback federation runs --insecure, so auth stays off there (see docs/reliability.md)."""
    reliability.area = "security"
    reliability.tried = "SuperNode authentication (`--enable-supernode-auth`) on a SuperLink as emulate starts it"
    reliability.kept = ("refused without TLS (emulate's loopback federation is --insecure); accepted with TLS "
                        "certificates made by the test — enabling it needs TLS, a key pair per SuperNode and "
                        "`flwr supernode register` for each")
    env = {**os.environ, **QUIET_ENV, "FLWR_HOME": str(tmp_path / "flwr-home"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # its flower-superexec
    insecure = subprocess.run(_superlink_argv(["--insecure", "--enable-supernode-auth"]), env=env, text=True,
                              capture_output=True, timeout=180)
    assert insecure.returncode != 0 and "requires encrypted TLS" in insecure.stdout + insecure.stderr
    files = make_tls(tmp_path / "tls", [LOOPBACK])
    tls_args = ["--enable-supernode-auth", "--ssl-ca-certfile", str(files.ca), "--ssl-certfile", str(files.cert),
                "--ssl-keyfile", str(files.key)]
    with Supervisor() as sup:
        link = sup.start("superlink", _superlink_argv(tls_args), env, tmp_path / "superlink.log")
        line = link.wait_for_line("Fleet HTTP API", 120.0)  # serving, with authentication on
        sup.check()
    assert "Starting the SuperLink Fleet HTTP API" in line.text
    assert "SuperNode authentication is disabled" not in (tmp_path / "superlink.log").read_text()
