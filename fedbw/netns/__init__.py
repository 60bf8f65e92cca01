"""Separate network hosts on one machine: Linux network namespaces joined by veth pairs to one switch.

Why: a federation (a SuperLink and SuperNodes) or a Ray cluster that spans hosts behaves differently
from one on loopback — every process binds and dials real addresses, TLS checks the names it dials,
each host has its own loopback — and this machine has no second host. A namespace per host gives each
its own interfaces, addresses and loopback; a bridge in a namespace of its own is the switch between
them. Nothing is routed anywhere else: the subnet is private and no namespace has a default route.

Needs root (``ip netns``) and iproute2; :func:`unavailable` says why not. :class:`HostNetwork` is a
context manager that deletes every namespace it made (their veths and qdiscs go with them), also on
error and Ctrl-C. A process is placed on a host by running it under ``ip netns exec NAME``
(:meth:`HostNetwork.argv`), which execs the command in place: its PID is the command's own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

#: The interface every host sees (its end of the veth pair to the switch).
HOST_DEV = "eth0"
#: The switch's bridge, inside the switch namespace.
BRIDGE = "br0"


def unavailable() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "not root: creating network namespaces needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"`{tool}` not found (install iproute2)"
    return None


def sh(*cmd: str) -> None:
    """Run one iproute2/tc command; a failure raises with the command's own error text."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise OSError(f"`{' '.join(cmd)}` failed: {(proc.stderr or proc.stdout).strip()}")


def limit_rate(ns: str, dev: str, rate_mbps: float, queue_bytes: int, burst_s: float = 0.002) -> None:
    """tc htb on ``dev`` in ``ns``: egress at ``rate_mbps`` (rate = ceil), a byte FIFO of ``queue_bytes``
    under it (a switch port's buffer; the veth's default queue holds about one MTU)."""
    rate = f"{int(rate_mbps * 1e6)}bit"
    burst = str(max(16 * 1024, int(rate_mbps * 1e6 / 8 * burst_s)))
    sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10")
    sh("ip", "netns", "exec", ns, "tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb",
       "rate", rate, "ceil", rate, "burst", burst, "cburst", burst)
    sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "bfifo",
       "limit", str(queue_bytes))


def namespaces() -> list[str]:
    """Names of the network namespaces that exist now."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.split()]


class HostNetwork:
    """``hosts`` as namespaces ``<prefix>-<host>`` on one switch, at ``<subnet>.1``, ``.2``, … in order.

    ``rate_mbps`` (optional) limits every host's link both ways with tc htb (:func:`limit_rate`).
    The prefix defaults to one unique to this process, so two runs never share or delete each other's
    namespaces.
    """

    def __init__(self, hosts: Sequence[str], *, subnet: str = "10.231.0", prefix: str | None = None,
                 rate_mbps: float | None = None, queue_bytes: int = 1 << 20) -> None:
        if len(set(hosts)) != len(hosts) or not hosts:
            raise ValueError(f"host names must be distinct and at least one: {list(hosts)}")
        if len(hosts) > 250:
            raise ValueError("at most 250 hosts on one /24 switch")
        self.hosts = list(hosts)
        self.subnet = subnet
        self.prefix = prefix or f"fedbw{os.getpid()}"
        self.rate_mbps, self.queue_bytes = rate_mbps, queue_bytes
        self.switch = f"{self.prefix}-switch"
        self._made: list[str] = []
        self._ports: dict[str, str] = {}  #: host → its veth end on the switch

    def ns(self, host: str) -> str:
        """The namespace of ``host``."""
        self._check(host)
        return f"{self.prefix}-{host}"

    def address(self, host: str) -> str:
        """``host``'s address on the switch."""
        self._check(host)
        return f"{self.subnet}.{self.hosts.index(host) + 1}"

    def argv(self, host: str, argv: Sequence[str]) -> list[str]:
        """``argv`` run on ``host`` (``ip netns exec``: the command replaces it, same PID)."""
        return ["ip", "netns", "exec", self.ns(host), *argv]

    def _check(self, host: str) -> None:
        if host not in self.hosts:
            raise KeyError(f"no host {host!r} on this network (hosts: {', '.join(self.hosts)})")

    def __enter__(self) -> HostNetwork:
        try:
            self._add_ns(self.switch)
            sh("ip", "-n", self.switch, "link", "add", BRIDGE, "type", "bridge")
            sh("ip", "-n", self.switch, "link", "set", BRIDGE, "up")
            tag = f"{os.getpid() % 100000:05d}"
            for i, host in enumerate(self.hosts):
                ns = self.ns(host)
                self._add_ns(ns)
                # veth names are global until moved (15 characters at most): unique, then renamed
                near, far = f"fbh{tag}{i:03d}"[:15], f"fbs{tag}{i:03d}"[:15]
                sh("ip", "link", "add", near, "type", "veth", "peer", "name", far)
                sh("ip", "link", "set", near, "netns", ns)
                sh("ip", "link", "set", far, "netns", self.switch)
                sh("ip", "-n", ns, "link", "set", near, "name", HOST_DEV)
                sh("ip", "-n", self.switch, "link", "set", far, "master", BRIDGE, "up")
                self._ports[host] = far
                sh("ip", "-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", HOST_DEV)
                sh("ip", "-n", ns, "link", "set", HOST_DEV, "up")
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                if self.rate_mbps is not None:
                    limit_rate(ns, HOST_DEV, self.rate_mbps, self.queue_bytes)  # the host's uplink
                    limit_rate(self.switch, far, self.rate_mbps, self.queue_bytes)  # its downlink
        except BaseException:
            self.close()
            raise
        return self

    def limit_host(self, host: str, up_mbps: float, down_mbps: float) -> None:
        """Limit one host's link (tc htb, frame rates): ``up_mbps`` leaving it, ``down_mbps`` reaching it
        (the switch port's egress). Only on a network made without ``rate_mbps`` (one root qdisc a device)."""
        if self.rate_mbps is not None:
            raise ValueError("this network already limits every host (rate_mbps)")
        limit_rate(self.ns(host), HOST_DEV, up_mbps, self.queue_bytes)
        limit_rate(self.switch, self.port(host), down_mbps, self.queue_bytes)

    def port(self, host: str) -> str:
        """The switch's end of ``host``'s link (a device in the switch namespace)."""
        self._check(host)
        return self._ports[host]

    def _add_ns(self, name: str) -> None:
        sh("ip", "netns", "add", name)
        self._made.append(name)

    def close(self) -> None:
        """Delete every namespace this network made."""
        for name in reversed(self._made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        self._made.clear()

    def __exit__(self, *exc: object) -> None:
        self.close()
