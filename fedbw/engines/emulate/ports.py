"""Free loopback ports, and a clear error when a requested one is taken."""

from __future__ import annotations

import socket

from fedbw.errors import RunError

LOOPBACK = "127.0.0.1"


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct ports that are free right now (bound together, then released).

    A port can be taken between release and use; the child that loses that race fails to start and
    the supervisor reports it with its log, so the race is visible rather than silent.
    """
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


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
