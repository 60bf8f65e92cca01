from __future__ import annotations

import socket

import pytest

from fedbw.engines.emulate import ports as ports_module
from fedbw.engines.emulate.ports import check_port_free, ephemeral_range, free_ports, wait_connectable
from fedbw.errors import RunError


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5
    for p in ports:
        check_port_free(p, "test")


def test_free_ports_avoid_the_kernels_own_picks_and_never_repeat() -> None:
    # the kernel hands ephemeral ports to bind(0) and outgoing connections: a port from there, released,
    # can be taken before the child binds it (CI 2026-12-01: a SuperNode's HTTP API port)
    low, high = ephemeral_range()
    seen: set[int] = set()
    for _ in range(20):
        ports = free_ports(3)
        assert not any(low <= p <= high for p in ports), (ports, low, high)
        assert not seen & set(ports)
        seen |= set(ports)


def test_a_taken_port_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        monkeypatch.setattr(ports_module, "_candidates", lambda: [taken, 20001, 20002])
        monkeypatch.setattr(ports_module, "_handed_out", set())
        assert taken not in free_ports(1)
        monkeypatch.setattr(ports_module, "_candidates", lambda: [taken])
        with pytest.raises(RunError, match="no 1 free ports"):
            free_ports(1)


def test_port_in_use_names_what_wanted_it() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(RunError, match=f"port 127.0.0.1:{port} for the SuperLink is in use"):
            check_port_free(port, "the SuperLink")
        assert wait_connectable(port, 1.0)
    assert not wait_connectable(port, 0.2)
