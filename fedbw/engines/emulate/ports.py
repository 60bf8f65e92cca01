"""Free loopback ports, and a clear error when a requested one is taken."""

from __future__ import annotations

import random
import socket
from pathlib import Path

from fedbw.errors import RunError

LOOPBACK = "127.0.0.1"

#: Ports handed out from here start at this floor: above the well-known and common service ports.
PORT_FLOOR = 20000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for ports it picks itself (``bind`` to port 0, outgoing connections)."""
    try:
        low, high = (int(x) for x in _EPHEMERAL_RANGE.read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def _candidates() -> list[int]:
    """Ports the kernel never picks by itself, in random order: below its ephemeral range, or above it."""
    low, high = ephemeral_range()
    ports = list(range(PORT_FLOOR, low)) if low - PORT_FLOOR >= 1000 else list(range(high + 1, 65536))
    random.SystemRandom().shuffle(ports)
    return ports


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct ports that are free right now, none handed out before by this process.

    They come from outside the kernel's ephemeral range. A port from ``bind(host, 0)`` is one the kernel
    hands to the next ``bind(0)`` or outgoing connection as well (the shaper's listeners, a SuperNode's
    own connections), and once released it was taken between release and use (CI, 2026-12-01: a
    SuperNode's HTTP API port was in use when it started). Outside that range only another program
    choosing the same random port can take it; the child that loses that race fails to start and the
    supervisor reports it with its log.
    """
    chosen: list[int] = []
    for port in _candidates():
        if len(chosen) == count:
            break
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        chosen.append(port)
        _handed_out.add(port)
    if len(chosen) < count:
        raise RunError(f"no {count} free ports on {host} outside the ephemeral range {ephemeral_range()} "
                       f"({len(_handed_out)} already handed out by this process, never twice)")
    return chosen


def check_port_free(port: int, what: str, host: str = LOOPBACK) -> None:
    """RunError naming ``what`` if ``host:port`` cannot be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            raise RunError(f"port {host}:{port} for {what} is in use ({exc.strerror}); choose another port "
                           f"or leave it at 0 to pick a free one") from None


def wait_connectable(port: int, timeout_s: float, host: str = LOOPBACK) -> bool:
    """Whether a TCP connect to ``host:port`` succeeds within ``timeout_s``."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False
