"""emulate across network hosts (fedbw/engines/emulate/hosts.py): the SuperLink on a host of its own, each
SuperNode on its own client host behind that host's shaper, TLS — and (slow) 3 client hosts for 2 rounds
whose records match a single-host emulate of the same app side by side."""

from __future__ import annotations

import json
import re
import socket
import ssl
import statistics
import subprocess
from pathlib import Path

import pytest

from fedbw import netns
from fedbw.engines.emulate.hosts import (SERVER_HOST, NamespaceThread, NetnsHosts, client_host, hosts_option,
                                         make_tls, merge_series)
from fedbw.errors import ConfigError, RunError
from fedbw.shaper.series import LinkSeries, Sample

ROOT = Path(__file__).resolve().parents[3]
FIXTURE_APP = ROOT / "tests/engines/fixtures/numpy_app"
needs_netns = pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))


def test_tls_certificate_names_the_addresses_a_supernode_dials(tmp_path: Path) -> None:
    from cryptography import x509

    files = make_tls(tmp_path, ["127.0.0.1", "10.232.0.1"])
    cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
    ca = x509.load_pem_x509_certificate(files.ca.read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(a) for a in sans.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "10.232.0.1"}
    cert.verify_directly_issued_by(ca)
    # what Python's TLS client (httpx, under Flower) does: the CA verifies the server at 127.0.0.1
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(files.cert, files.key)
    client_ctx = ssl.create_default_context(cafile=str(files.ca))
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        import threading

        def serve() -> None:
            conn, _ = listener.accept()
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"ok")

        t = threading.Thread(target=serve)
        t.start()
        with socket.create_connection(listener.getsockname()) as raw, \
                client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.recv(2) == b"ok"
        t.join()
    with pytest.raises(ssl.SSLCertVerificationError):  # a name the certificate does not carry is refused
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            t = threading.Thread(target=lambda: _accept_tls(listener, server_ctx))
            t.start()
            try:
                with socket.create_connection(listener.getsockname()) as raw:
                    client_ctx.wrap_socket(raw, server_hostname="10.9.9.9")
            finally:
                t.join()


def _accept_tls(listener: socket.socket, ctx: ssl.SSLContext) -> None:
    conn, _ = listener.accept()
    try:
        ctx.wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError):
        pass
    finally:
        conn.close()


def test_merged_series_cuts_the_same_transfers_as_each_hosts_own() -> None:
    a, b = LinkSeries(["0"], 0.005, t0_s=10.0), LinkSeries(["1"], 0.005, t0_s=10.2)
    for i in range(1, 6):
        a.add("0", "up", Sample(10.0 + i, 100 * i, 100 * i, 10.0 + i, 10.0 + i))
        b.add("1", "down", Sample(10.2 + i, 50 * i, 50 * i, 10.2 + i, 10.2 + i))
    merged = merge_series([a, b])
    assert merged.totals("0", "up") == 500 and merged.totals("1", "down") == 250 and merged.totals("0", "down") == 0
    for series, cid, d in ((a, "0", "up"), (b, "1", "down")):
        assert merged.transfer(cid, d, 11.5, 14.5) == series.transfer(cid, d, 11.5, 14.5)


def test_hosts_option_names_the_choices() -> None:
    assert hosts_option("loopback") is None and hosts_option(" NetNS ") == NetnsHosts()
    with pytest.raises(ConfigError, match='"loopback" or "netns"'):
        hosts_option("kubernetes")


def test_without_namespaces_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import contextlib

    monkeypatch.setattr(netns, "unavailable", lambda: "not root")
    with contextlib.ExitStack() as stack, pytest.raises(ConfigError, match="network namespaces: not root"):
        NetnsHosts().open(stack, [0, 1], tmp_path)


@needs_netns
def test_a_thread_on_the_server_host_sees_only_that_host(tmp_path: Path) -> None:
    with netns.HostNetwork([SERVER_HOST, client_host(0)], subnet="10.233.0") as net:
        here = {name for _, name in socket.if_nameindex()}
        thread = NamespaceThread(net.ns(SERVER_HOST))
        try:
            assert {name for _, name in thread.call(socket.if_nameindex)} == {"lo", netns.HOST_DEV}
            # a listener there is reachable from the client host, not from this process's own namespace
            srv = thread.call(socket.create_server, (net.address(SERVER_HOST), 0))
            port = srv.getsockname()[1]
            probe = ["python3", "-c", f"import socket; socket.create_connection(('{net.address(SERVER_HOST)}', {port}), 2)"]
            assert subprocess.run(net.argv(client_host(0), probe), capture_output=True).returncode == 0
            with pytest.raises(OSError):
                socket.create_connection((net.address(SERVER_HOST), port), 0.5)
            srv.close()
        finally:
            thread.close()
        assert {name for _, name in socket.if_nameindex()} == here  # this thread never moved
    assert net.ns(SERVER_HOST) not in netns.namespaces()


@needs_netns
def test_the_server_hosts_link_is_limited_both_ways_by_tc() -> None:
    with netns.HostNetwork([SERVER_HOST, client_host(0)], subnet="10.233.1") as net:
        net.limit_host(SERVER_HOST, up_mbps=100.0, down_mbps=40.0)
        up = subprocess.run(["tc", "-n", net.ns(SERVER_HOST), "class", "show", "dev", netns.HOST_DEV],
                            capture_output=True, text=True).stdout
        down = subprocess.run(["tc", "-n", net.switch, "class", "show", "dev", net.port(SERVER_HOST)],
                              capture_output=True, text=True).stdout
        assert "rate 100Mbit" in up and "rate 40Mbit" in down
    with pytest.raises(ValueError, match="already limits"):
        netns.HostNetwork(["a"], rate_mbps=10).limit_host("a", 1, 1)


# ------------------------------------------------------------------------------ 3 client hosts (slow)

#: 5 M float32 parameters (20 MB) a message: ≈ 5.6 s up a home-30 uplink, so the link, not the host,
#: sets the transfer times that are compared (the host's stalls are a smaller part of them).
RUN_CONFIG = ["num-params=5000000"]


def _client_rows(run_dir: Path) -> dict[tuple[int, int], dict]:
    rows = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()[1:] if line.strip()]
    return {(r["round"], r["client_id"]): r for r in rows if r.get("kind") == "client"}


def _round_rows(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()[1:] if line.strip()]
    return [r for r in rows if r.get("kind") == "round"]


@pytest.mark.slow
@needs_netns
def test_three_client_hosts_two_rounds_match_a_single_host_emulate(tmp_path: Path) -> None:
    import psutil

    from fedbw.runner import run_app

    before = set(netns.namespaces())
    runs = {}
    # side by side, same app and links; dilated by 2 (auto would take 4 here, doubling the test's ~5 minutes):
    # a dilation reaches the client hosts' Flower intervals and shapers all the same, and a host short of
    # cores only slows the runs, which nothing below bounds from above
    for kind, hosts in (("hosts", NetnsHosts()), ("single", None)):
        runs[kind] = run_app(FIXTURE_APP, 3, "home-30", engine="emulate", rounds=2, run_config=RUN_CONFIG,
                             out_dir=tmp_path / kind, dilation=2.0, hosts=hosts)
    assert set(netns.namespaces()) == before, "namespaces left behind"
    multi, single = tmp_path / "hosts", tmp_path / "single"

    # it ran across hosts: the SuperLink served TLS on all interfaces and saw each client from its own address
    superlink = (multi / "emulate-logs/superlink.log").read_text()
    assert "Uvicorn running on https://0.0.0.0:9092" in superlink
    subnet = NetnsHosts().subnet
    assert {f"{subnet}.{i}" for i in (2, 3, 4)} <= set(re.findall(rf"({subnet}\.\d+):\d+", superlink))
    assert "https" not in (single / "emulate-logs/superlink.log").read_text()
    for cid in range(3):  # each client host's shaper kept its ledger, series and log
        assert all((multi / f"emulate-logs/client-{cid}-{f}").stat().st_size > 0
                   for f in ("ledger.jsonl", "link-series.jsonl", "shaper.log"))

    m_clients, s_clients = _client_rows(multi), _client_rows(single)
    assert m_clients.keys() == s_clients.keys() == {(r, c) for r in (1, 2) for c in range(3)}
    # bytes per client and round within the fidelity target for bytes (docs/fidelity.md, 2 %): the same
    # messages; TLS adds its records and handshakes (≈ 0.15 % of a 20 MB message)
    for key, m in m_clients.items():
        for d in ("bytes_up", "bytes_down"):
            assert abs(m[d] / s_clients[key][d] - 1) <= 0.02, (key, d, m[d], s_clients[key][d])
    # link-bound uploads (≥ 1 s): shaped on both arrangements, never faster than the link (to the series'
    # sampling: 5 %). How close either comes to the link, and the two to each other (the fidelity targets:
    # 2 % of a transfer, 10 % of a round), are timings of two runs one after the other on a shared host:
    # measurements, not this test's to assert.
    from fedbw.links import profile_link
    from fedbw.netmodel.transfer import transfer_time_s

    link = profile_link("home-30").model()
    for kind, rows in (("hosts", m_clients), ("single", s_clients)):
        model = statistics.median(transfer_time_s(r["bytes_up"], link.up_payload_mbps, link.one_way_s) for r in rows.values())
        measured = statistics.median(r["t_up_s"] for r in rows.values())
        assert model >= 1.0
        assert measured >= 0.95 * model, (kind, measured, model)
    # whole rounds, the two waits on Flower's 3 s poll grids taken out of each, still hold the 20 MB upload
    m_rounds, s_rounds = _round_rows(multi), _round_rows(single)
    assert [r["round"] for r in m_rounds] == [r["round"] for r in s_rounds] == [1, 2]
    for m, s in zip(m_rounds, s_rounds):
        assert _off_the_poll_grids(m) >= 5.0 and _off_the_poll_grids(s) >= 5.0, (
            m["round"], m["round_time_s"], s["round_time_s"], m["extra"]["framework_parts_s"],
            s["extra"]["framework_parts_s"])
    assert not _processes_across_hosts(psutil), "processes left behind"


def _off_the_poll_grids(round_row: dict) -> float:
    """The round's time less its critical client's two waits on a poll grid (SuperNode pull, ServerApp pull)."""
    parts = round_row["extra"]["framework_parts_s"]
    return round_row["round_time_s"] - parts["supernode_poll_s"] - parts["serverapp_poll_s"]


def _processes_across_hosts(psutil) -> list:
    """Processes of an emulation across hosts still running: the SuperNodes (they alone get the run's CA),
    the per-host shapers, the SuperLink on all interfaces at its fixed port."""
    def across(cmd: str) -> bool:
        return ("/tls/ca.pem" in cmd or "/hosts/client-" in cmd
                or ("flower-superlink" in cmd and "--host 0.0.0.0 --port 9092" in cmd))
    return [p for p in psutil.process_iter(["pid", "cmdline"]) if across(" ".join(p.info["cmdline"] or []))]


@pytest.mark.slow
@needs_netns
def test_a_failed_run_across_hosts_leaves_no_namespace_or_process(tmp_path: Path) -> None:
    import psutil

    from fedbw.runner import run_app

    before = set(netns.namespaces())
    with pytest.raises(RunError, match="did not finish within"):
        run_app(FIXTURE_APP, 3, "home-30", engine="emulate", rounds=2, out_dir=tmp_path / "run", timeout_s=1.0,
                hosts=NetnsHosts())
    assert set(netns.namespaces()) == before
    assert not _processes_across_hosts(psutil)


@pytest.mark.slow
@needs_netns
def test_hosts_from_the_config_with_supernode_authentication(tmp_path: Path) -> None:
    """`[emulate] hosts = "netns"` and `supernode_auth = true` in a config: fedbw's own apps across hosts,
    each SuperNode's key registered through the server host's Control API before it connects."""
    from fedbw.config import config_from_dict
    from fedbw.runner import run_experiment

    before = set(netns.namespaces())
    cfg = config_from_dict({
        "name": "hosts-auth", "engine": "emulate", "seed": 0, "output_dir": str(tmp_path),
        "clients": {"total": 2, "per_round": 2, "compute": "synthetic"}, "training": {"rounds": 1},
        "network": {"profile": "home-80"}, "emulate": {"hosts": "netns", "supernode_auth": True}})
    result = run_experiment(cfg)
    assert set(netns.namespaces()) == before, "namespaces left behind"
    assert [r.round for r in result.rounds] == [1] and sorted(c.client_id for c in result.clients) == [0, 1]
    superlink = (result.run_dir / "emulate-logs/superlink.log").read_text()
    assert "Uvicorn running on https://0.0.0.0:9092" in superlink  # on the server host, TLS
    assert "SuperNode authentication is disabled" not in superlink
    registered = re.findall(r"\[ControlServicer\.RegisterNode\] Created node_id=(\d+)", superlink)
    activated = re.findall(r"\[Fleet\.ActivateNode\] Activated node_id=(\d+)", superlink)
    assert len(set(registered)) == 2 and sorted(activated) == sorted(registered)
    subnet = NetnsHosts().subnet
    assert {f"{subnet}.{i}" for i in (2, 3)} <= set(re.findall(rf"({subnet}\.\d+):\d+", superlink))
    resolved = json.loads((result.run_dir / "resolved_config.json").read_text())
    assert resolved["emulate"]["hosts"] == "netns" and resolved["emulate"]["supernode_auth"] is True


def test_loopback_and_netns_hosts_are_one_interface_and_loopback_opens_without_a_process(tmp_path: Path) -> None:
    """emulate_app takes either through ``Hosts``; the loopback federation's deployment serves TLS when
    asked, refuses SuperNode auth without it before anything starts, and its shaper shapes the server's
    link (netns hosts shape it with tc when they open)."""
    import contextlib
    import inspect

    from fedbw.engines.emulate.flower import FlowerDeployment
    from fedbw.engines.emulate.hosts import Federation, Hosts, LoopbackHosts
    from fedbw.processes import Supervisor
    from fedbw.shaper import LinkSpec

    for cls in (LoopbackHosts, NetnsHosts):
        assert set(inspect.signature(cls.open).parameters) == set(inspect.signature(Hosts.open).parameters)
    with contextlib.ExitStack() as stack:
        fed = LoopbackHosts(tls=True).open(stack, [0, 1], tmp_path, server_link=LinkSpec(100, 100))
        assert fed.tls is not None and fed.tls.ca.is_file() and fed.server_link == LinkSpec(100, 100)
        for name in ("deployment", "shapers"):
            assert set(inspect.signature(getattr(fed, name)).parameters) == \
                set(inspect.signature(getattr(Federation, name)).parameters) - {"self"}
        with Supervisor() as sup:
            dep = fed.deployment(sup, tmp_path, None)
            assert isinstance(dep, FlowerDeployment) and dep.tls is fed.tls
    with pytest.raises(ConfigError, match="TLS"):
        LoopbackHosts(tls=False, supernode_auth=True).open(contextlib.ExitStack(), [0], tmp_path)
