"""Which Flower node is which fedbw client, known without asking when the Simulation Engine made the nodes.

fedbw's ServerApp must know node id ↔ client id (the partition id) before round 1: each client has its own
link, data and place in the plan's samples. Under deployment it asks every SuperNode once (a "hello" query,
:func:`fedbw.fl.server_app.discover_clients`). Under Flower's Simulation Engine that query costs a ClientApp
run per node — about 15 ms each here, 2.5 minutes for 10,000 clients, paid again at every run of a sweep —
although the engine itself created the nodes and numbered their partitions: flwr 1.42's
``vce_api._register_nodes`` returns exactly that mapping, in the same process as the ServerApp (a thread of
``run_simulation``). :func:`install` wraps it to keep the mapping; the ServerApp takes it from here.
tests/fl/test_node_map.py reads Flower's source and fails when an upgrade moves the function or its use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

_ready = threading.Event()
_expected = False
_node_to_partition: dict[int, int] = {}


def install() -> None:
    """Keep the node → partition mapping the Simulation Engine registers (call before ``run_simulation``)."""
    global _expected
    from flwr.server.superlink.fleet.vce import vce_api

    original: Callable[..., Any] = getattr(vce_api._register_nodes, "__wrapped__", vce_api._register_nodes)

    def register_and_keep(*args: Any, **kwargs: Any) -> Any:
        mapping = original(*args, **kwargs)
        remember(mapping)
        return mapping

    register_and_keep.__wrapped__ = original  # type: ignore[attr-defined]
    vce_api._register_nodes = register_and_keep
    _expected = True


def remember(node_to_partition: Mapping[int, int]) -> None:
    _node_to_partition.clear()
    _node_to_partition.update({int(n): int(p) for n, p in node_to_partition.items()})
    _ready.set()


def client_nodes(timeout_s: float) -> dict[int, int] | None:
    """fedbw client id → Flower node id as the Simulation Engine registered them; None outside it (nothing
    installed) or when the engine has not registered its nodes within ``timeout_s``."""
    if not _expected or not _ready.wait(timeout_s):
        return None
    return {p: n for n, p in _node_to_partition.items()}
