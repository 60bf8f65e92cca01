"""The Simulation Engine's own node ↔ partition mapping replaces the hello query (issue 32.6): the wrapper
keeps what Flower registers, the ServerApp uses it only when it covers every client, and a Flower upgrade
that moves the function fails here."""

from __future__ import annotations

import inspect

from fedbw.fl import node_map


def test_flowers_registration_still_returns_the_mapping_and_is_looked_up_by_name() -> None:
    from flwr.server.superlink.fleet.vce import vce_api

    source = inspect.getsource(vce_api)
    assert "def _register_nodes(" in source and "nodes_mapping[node_id] = i" in source
    assert "nodes_mapping = _register_nodes(" in source  # a global lookup at call time: the wrapper is seen


def test_the_wrapper_keeps_the_mapping_and_hands_it_out_by_client(monkeypatch) -> None:
    from flwr.server.superlink.fleet.vce import vce_api

    monkeypatch.setattr(vce_api, "_register_nodes", lambda num_nodes, state_factory: {901: 0, 77: 1, 5: 2})
    monkeypatch.setattr(node_map, "_expected", False)
    node_map._ready.clear()
    assert node_map.client_nodes(timeout_s=0.0) is None  # nothing installed: ask the nodes
    node_map.install()
    assert vce_api._register_nodes(num_nodes=3, state_factory=None) == {901: 0, 77: 1, 5: 2}
    assert node_map.client_nodes(timeout_s=0.0) == {0: 901, 1: 77, 2: 5}
    node_map.install()  # installing twice wraps Flower's function once
    assert vce_api._register_nodes.__wrapped__.__name__ == "<lambda>"
    node_map._ready.clear()
    monkeypatch.setattr(node_map, "_expected", False)
