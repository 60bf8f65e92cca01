"""emulate across network hosts: the SuperLink on a host of its own, every SuperNode on its own client
host behind that host's shaper, TLS between them — the layout docs/multi-host.md prescribes for a real
deployment, built on this machine from network namespaces (:mod:`fedbw.netns`).

Why: on one loopback every process shares one network stack, so a federation never dials a real
address, never checks a certificate against the name it dialled and never has a client whose shaper
sits on *its* machine. Here each host is a namespace with its own address and loopback:

* ``server`` (``<subnet>.1``): ``flower-superlink --host 0.0.0.0`` with TLS (a CA made for the run
  signs the server's certificate for its address and 127.0.0.1); the ``flwr`` CLI runs there too, as
  an operator on the server host would.
* ``client-<id>`` (``<subnet>.<id + 2>``): ``python -m fedbw.shaper.service`` listening on the host's
  own 127.0.0.1 and forwarding to the server's address, and ``flower-supernode --superlink
  127.0.0.1:<shaper port> --root-certificates ca.pem`` behind it. TLS passes through the shaper
  untouched; the certificate names 127.0.0.1 because that is what the SuperNode dials.

:func:`fedbw.engines.emulate.federation.emulate_app` takes :class:`Hosts`: :class:`LoopbackHosts` (every
process on this machine's loopback, one shaper; the default) or :class:`NetnsHosts` (``hosts=``), two
implementations of one small interface — open the hosts, then a Flower deployment on them and the
shaper(s) in front of the SuperNodes. Everything else is the same: the supervisor, the measurement (the
per-host shapers' link series merged into one), the records. The namespaces are deleted when the run
ends, also on failure.
The fedbw process stays in the machine's own namespace; it reaches the SuperLink's Control API
through one thread that has entered the server's namespace (:class:`NamespaceThread`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from fedbw import netns
from fedbw.engines.emulate.flower import CLI_TIMEOUT_S, STARTUP_TIMEOUT_S, FlowerDeployment, _place, _script
from fedbw.engines.emulate.ports import LOOPBACK, wait_connectable
from fedbw.engines.emulate.security import TlsFiles, make_tls, supernode_auth_error
from fedbw.engines.emulate.shaper_process import ShaperProcess
from fedbw.errors import ConfigError, RunError
from fedbw.processes import Child, Supervisor
from fedbw.shaper.link import ClientRoute
from fedbw.shaper.series import LinkSeries
from fedbw.timewarp import Dilation
from fedbw.tomlvalue import format_value

#: The server host's name (its namespace is ``<prefix>-server``).
SERVER_HOST = "server"
#: The SuperLink's port on the server host (a host of its own: nothing else binds there).
SUPERLINK_PORT = 9092
#: Each SuperNode's own port (ClientAppIo) on its client host.
SUPERNODE_PORT = 9094
#: TCP payload per Ethernet frame at MTU 1500 with timestamps (1448 / 1514): tc counts frames.
PAYLOAD_PER_FRAME = 1448 / 1514
#: ``setns(2)``'s flag for a network namespace.
CLONE_NEWNET = 0x40000000
T = TypeVar("T")


def client_host(client_id: int) -> str:
    """The host of client ``client_id``."""
    return f"client-{client_id}"


# --------------------------------------------------------------------------- a thread on another host


class Shapers(Protocol):
    """The shaper(s) of a federation: every client's port, and one link series of all of them."""

    ports: dict[str, int]
    pids: list[int]  #: the shaper processes (signalled to anchor traced links: fedbw.shaper.anchor)

    def series(self) -> LinkSeries: ...

    def final_series(self) -> LinkSeries: ...


class Federation(Protocol):
    """Hosts that are open: where the Flower deployment and the shapers run."""

    def deployment(self, sup: Supervisor, workdir: Path, env_extra: Mapping[str, str] | None) -> FlowerDeployment: ...

    def shapers(self, sup: Supervisor, workdir: Path, links: Mapping[int, Any], superlink_port: int, *,
                env: dict[str, str], interval_s: float, cpu_group: Any, dilation: Dilation) -> Shapers: ...


class Hosts(Protocol):
    """Where an emulation's processes run (:class:`LoopbackHosts`, :class:`NetnsHosts`)."""

    name: ClassVar[str]  #: ``[emulate] hosts``' value for it

    def open(self, stack: contextlib.ExitStack, client_ids: Sequence[int], workdir: Path,
             server_link: Any = None) -> Federation: ...


@dataclass(frozen=True)
class LoopbackHosts:
    """Every process on this machine's loopback: one shaper for all clients, which also shapes the
    server's own link (``server_link``, shared by every client's flows). ``tls``: the SuperLink serves TLS
    (a CA made for the run); ``supernode_auth``: every SuperNode authenticates (needs ``tls``)."""

    name: ClassVar[str] = "loopback"
    tls: bool = False
    supernode_auth: bool = False

    def open(self, stack: contextlib.ExitStack, client_ids: Sequence[int], workdir: Path,
             server_link: Any = None) -> LoopbackFederation:
        if self.supernode_auth and (why := supernode_auth_error(self.tls)) is not None:
            raise ConfigError(why)
        return LoopbackFederation(make_tls(workdir / "tls", [LOOPBACK]) if self.tls else None, self.supernode_auth,
                                  server_link)


@dataclass
class LoopbackFederation:
    tls: TlsFiles | None
    supernode_auth: bool
    server_link: Any = None  #: the server's own link, already dilated (a shaper LinkSpec), or None

    def deployment(self, sup: Supervisor, workdir: Path, env_extra: Mapping[str, str] | None) -> FlowerDeployment:
        return FlowerDeployment(sup, workdir, env_extra, supernode_auth=self.supernode_auth, tls=self.tls)

    def shapers(self, sup: Supervisor, workdir: Path, links: Mapping[int, Any], superlink_port: int, *,
                env: dict[str, str], interval_s: float, cpu_group: Any, dilation: Dilation) -> ShaperProcess:
        routes = [ClientRoute(str(cid), LOOPBACK, 0, LOOPBACK, superlink_port, link) for cid, link in links.items()]
        return ShaperProcess(sup, workdir, routes, env=env, interval_s=interval_s, shared_link=self.server_link,
                             cpu_group=cpu_group, dilation=dilation)


class NamespaceThread:
    """One worker thread inside network namespace ``ns``: every socket it opens is that host's.

    ``setns(2)`` with a network namespace moves only the calling thread, so the rest of this process
    (and every process it starts without ``ip netns exec``) stays where it was."""

    def __init__(self, ns: str) -> None:
        self.ns = ns
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"netns-{ns}", initializer=_enter_netns,
                                        initargs=(ns,))

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on the thread inside the namespace."""
        return self._pool.submit(fn, *args, **kwargs).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _enter_netns(ns: str) -> None:
    fd = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into network namespace {ns} failed")
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------------ the federation


@dataclass(frozen=True)
class NetnsHosts:
    """emulate on separate network hosts of this machine: the server on one, each client on its own.

    ``tls``: the SuperLink serves TLS with a certificate from a CA made for the run (on by default, as
    in a real deployment). ``supernode_auth``: SuperNode authentication (:mod:`.flower`), which needs
    ``tls``. ``subnet``: the hosts' private /24 (``<subnet>.1`` is the server)."""

    name: ClassVar[str] = "netns"
    tls: bool = True
    subnet: str = "10.232.0"
    supernode_auth: bool = False

    def open(self, stack: contextlib.ExitStack, client_ids: Sequence[int], workdir: Path,
             server_link: Any = None) -> HostFederation:
        """Make the hosts (deleted when ``stack`` closes, after every process in them has stopped if
        the caller enters its supervisor later) and the run's TLS files. ``server_link`` (a shaper
        LinkSpec, payload rates) limits the server host's own link with tc, as its NIC would: every
        client's uploads share its downlink, every download its uplink (rates only; no latency)."""
        if (why := netns.unavailable()) is not None:
            raise ConfigError(f"emulate across hosts needs network namespaces: {why}")
        if self.supernode_auth and (why := supernode_auth_error(self.tls)) is not None:
            raise ConfigError(why)
        net = netns.HostNetwork([SERVER_HOST, *(client_host(c) for c in client_ids)], subnet=self.subnet)
        stack.enter_context(net)
        if server_link is not None:
            net.limit_host(SERVER_HOST, server_link.down_mbps / PAYLOAD_PER_FRAME,
                           server_link.up_mbps / PAYLOAD_PER_FRAME)
        tls = make_tls(workdir / "tls", [LOOPBACK, net.address(SERVER_HOST)]) if self.tls else None
        server = NamespaceThread(net.ns(SERVER_HOST))
        stack.callback(server.close)
        return HostFederation(net, tls, server, self.supernode_auth)


@dataclass
class HostFederation:
    """The hosts of one run: the network, the TLS files (None: insecure), a thread on the server host,
    whether SuperNodes authenticate."""

    net: netns.HostNetwork
    tls: TlsFiles | None
    server: NamespaceThread
    supernode_auth: bool = False

    @property
    def server_address(self) -> str:
        return self.net.address(SERVER_HOST)

    def deployment(self, sup: Supervisor, workdir: Path, env_extra: Mapping[str, str] | None) -> HostsDeployment:
        return HostsDeployment(sup, workdir, env_extra, self)

    def shapers(self, sup: Supervisor, workdir: Path, links: Mapping[int, Any], superlink_port: int,
                **kwargs: Any) -> HostShapers:
        """One shaper per client host, in front of its SuperNode (``links``: client id → LinkSpec)."""
        return HostShapers(sup, workdir, self, links, superlink_port, **kwargs)


class HostsDeployment(FlowerDeployment):
    """:class:`FlowerDeployment` with the SuperLink (and the ``flwr`` CLI) on the server host and each
    SuperNode on its client host."""

    def __init__(self, sup: Supervisor, workdir: Path, env_extra: Mapping[str, str] | None,
                 hosts: HostFederation) -> None:
        super().__init__(sup, workdir, env_extra, tls=hosts.tls, supernode_auth=hosts.supernode_auth)
        self.hosts = hosts

    def start_superlink(self, port: int = 0, cpu_group: Any = None) -> int:
        port = port or SUPERLINK_PORT
        argv = [_script("flower-superlink"), *self.superlink_security_args(), "--host", "0.0.0.0", "--port", str(port),
                "--disable-runtime-dependency-installation"]
        child = self.sup.start("superlink", self.hosts.net.argv(SERVER_HOST, argv), self.env,
                               self.logs / "superlink.log", nice=self.nice, wave=0)
        _place(child, cpu_group)
        self.superlink, self.superlink_port = child, port
        child.wait_for_line("Fleet HTTP API", STARTUP_TIMEOUT_S)
        if not self.hosts.server.call(wait_connectable, port, STARTUP_TIMEOUT_S):
            raise RunError(child.describe_failure(f"did not accept connections on the server host, port {port}"))
        time.sleep(0.3)
        self.sup.check()
        self._write_connection(port)
        return port

    def _control_call(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(control client)`` on the thread inside the server host (the SuperLink's 127.0.0.1)."""
        return self.hosts.server.call(fn, self._control_client())

    def start_supernode(self, name: str, superlink_port: int, node_config: Mapping[str, Any],
                        on_line: Callable[[Child, Any], None] | None = None, cpu_group: Any = None) -> Child:
        """SuperNode ``name`` (= its host, ``client-<id>``) dialling its host's shaper at ``superlink_port``."""
        cfg = " ".join(f"{k}={format_value(v)}" for k, v in node_config.items())
        argv = [_script("flower-supernode"), *self.supernode_security_args(name), "--superlink",
                f"{LOOPBACK}:{superlink_port}", "--port", str(SUPERNODE_PORT), "--node-config", cfg]
        child = self.sup.start(name, self.hosts.net.argv(name, argv), self.env, self.logs / f"{name}.log",
                               on_line=on_line, nice=self.nice, label=f"SuperNode {name}")
        _place(child, cpu_group)
        self.supernodes[name] = child
        return child

    def _flwr(self, *args: str, timeout_s: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        """The ``flwr`` CLI on the server host."""
        try:
            return subprocess.run(self.hosts.net.argv(SERVER_HOST, [_script("flwr"), *args]), env=self.env,
                                  capture_output=True, text=True, timeout=timeout_s, cwd=self.workdir,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RunError(f"`flwr {' '.join(args)}` did not return within {timeout_s:.0f} s") from None


class _OnHost:
    """The supervisor, starting every command on ``host`` (for :class:`ShaperProcess`)."""

    def __init__(self, sup: Supervisor, net: netns.HostNetwork, host: str) -> None:
        self.sup, self.net, self.host = sup, net, host

    def start(self, name: str, argv: Sequence[str], env: Mapping[str, str], log_path: Path, **kwargs: Any) -> Child:
        return self.sup.start(f"{name}-{self.host}", self.net.argv(self.host, argv), env, log_path, **kwargs)


class HostShapers:
    """A shaper process on every client host (listening on that host's 127.0.0.1, forwarding to the
    server's address); together they look like emulate's one shaper: ports by client, one link series."""

    def __init__(self, sup: Supervisor, workdir: Path, hosts: HostFederation, links: Mapping[int, Any],
                 superlink_port: int, *, env: dict[str, str], interval_s: float, **kwargs: Any) -> None:
        self.interval_s = interval_s
        self.logs = workdir / "logs"
        self.parts: dict[int, ShaperProcess] = {}
        for cid, link in links.items():
            host = client_host(cid)
            route = ClientRoute(str(cid), LOOPBACK, 0, hosts.server_address, superlink_port, link)
            self.parts[cid] = ShaperProcess(_OnHost(sup, hosts.net, host), workdir / "hosts" / host,  # type: ignore[arg-type]
                                            [route], env=env, interval_s=interval_s, **kwargs)
        self.ports = {k: v for part in self.parts.values() for k, v in part.ports.items()}
        self.pids = [pid for part in self.parts.values() for pid in part.pids]

    def series(self) -> LinkSeries:
        return merge_series([part.series() for part in self.parts.values()])

    def final_series(self) -> LinkSeries:
        """The merged series once the last bytes are sampled; each host's ledger, series and log are then
        put beside the run's other logs (``client-<id>-ledger.jsonl``, …), as its host would keep them."""
        time.sleep(3 * self.interval_s)
        series = self.series()
        self.logs.mkdir(parents=True, exist_ok=True)
        for cid, part in self.parts.items():
            for f in part.series_path.parent.glob("*"):
                if f.is_file():
                    shutil.copy2(f, self.logs / f"{client_host(cid)}-{f.name}")
        return series


def merge_series(parts: Sequence[LinkSeries]) -> LinkSeries:
    """One series holding every client of ``parts`` (each part: one host's shaper)."""
    keys = {key: samples for part in parts for key, samples in part.series.items()}
    t0 = min((samples[0].t_s for samples in keys.values()), default=None)
    out = LinkSeries(sorted({cid for cid, _ in keys}), min((p.interval_s for p in parts), default=0.005), t0)
    for (cid, direction), samples in keys.items():
        for sample in samples[1:]:
            out.add(cid, direction, sample)
    return out


#: The values of ``fedbw emulate --hosts``.
HOSTS_CHOICES = ("loopback", "netns")


def hosts_option(text: str) -> NetnsHosts | None:
    """``--hosts``: "loopback" (everything on this host's 127.0.0.1: None) or "netns" (:class:`NetnsHosts`)."""
    value = text.strip().lower()
    if value not in HOSTS_CHOICES:
        raise ConfigError(f'--hosts must be "loopback" or "netns" (a network host per process group, '
                          f'root needed), got {text!r}')
    return NetnsHosts() if value == "netns" else None


def hosts_for(hosts: str) -> NetnsHosts | None:
    """``[emulate] hosts`` (checked by the config) as the layout ``emulate_app`` takes: None on
    loopback, else network hosts (always TLS)."""
    return NetnsHosts() if hosts == "netns" else None
