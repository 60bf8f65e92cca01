from __future__ import annotations

import socket

import pytest

from fedbw.engines.emulate.ports import check_port_free, free_ports, wait_connectable
from fedbw.errors import RunError


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5
    for p in ports:
        check_port_free(p, "test")


def test_port_in_use_names_what_wanted_it() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(RunError, match=f"port 127.0.0.1:{port} for the SuperLink is in use"):
            check_port_free(port, "the SuperLink")
        assert wait_connectable(port, 1.0)
    assert not wait_connectable(port, 0.2)
