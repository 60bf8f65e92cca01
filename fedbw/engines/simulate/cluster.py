"""Flower's Simulation Engine on an existing Ray cluster: attach, ship the plan, record where clients ran.

Only :mod:`.child` (the simulation process) uses this, and only when the config names a cluster
(``[simulate] ray_address`` or ``fedbw run --ray-address``); without one fedbw starts a private Ray and
never attaches by accident.

On a cluster the ClientApp actors run in worker processes that the *cluster's* raylets start: they
inherit the environment of whoever ran ``ray start`` on that node, not this process's, and they may
sit on another host without this run directory. So the attach passes everything a worker needs in
Ray's job ``runtime_env``: the plan file itself in a one-file ``working_dir`` (Ray uploads it to the
cluster and unpacks it as each worker's current directory), ``$FEDBW_PLAN`` naming it relative to that
directory, the torch thread count, and Flower's no-telemetry switches. fedbw and Flower must be
installed on every node (the same versions: docs/multi-host.md).

Which node ran which client is not visible from the driver (Flower's actor pool hides it), so each
ClientApp call reports ``(round, client, Ray node id)`` to a small actor of this job before it
returns its reply; that actor, on this node, appends it to ``ray-placement.jsonl`` in the run
directory. The report is a Ray call per message (≈ 1 ms); it travels outside Flower's messages, so the
measured bytes are those of a local run.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from fedbw.errors import RunError

#: Written into the run directory of a run on a cluster: the cluster's nodes and where each message ran.
PLACEMENT_FILE = "ray-placement.jsonl"
MIB = 2**20


def client_resources(client_cpus: float, client_gpus: float | None, client_memory_mb: int | None,
                     default_gpus: float) -> dict[str, float]:
    """What each ClientApp actor asks Ray for (Flower's ``client_resources``); unset GPUs take ``default_gpus``."""
    res: dict[str, float] = {"num_cpus": float(client_cpus),
                             "num_gpus": float(default_gpus if client_gpus is None else client_gpus)}
    if client_memory_mb is not None:
        res["memory"] = float(client_memory_mb * MIB)
    return res


def actors_per_node(nodes: list[dict[str, Any]], resources: dict[str, float]) -> dict[str, int]:
    """How many actors Flower's pool puts on each live node (its ``pool_size_from_resources`` rule: CPUs,
    then GPUs when asked for); RunError when a node cannot hold them in the memory each one reserves,
    since Flower's pool does not count memory and would wait forever on actors Ray cannot place."""
    out: dict[str, int] = {}
    for node in nodes:
        have = node.get("Resources") or {}
        if not node.get("Alive", True) or not have:
            continue
        n = int(have.get("CPU", 0) / resources["num_cpus"])
        if resources.get("num_gpus", 0) > 0:
            n = min(n, int(have.get("GPU", 0) / resources["num_gpus"]))
        need = resources.get("memory", 0.0) * n
        if need > have.get("memory", math.inf):
            raise RunError(f"Ray node {node.get('NodeManagerAddress', '?')} fits {n} ClientApp actors by CPU/GPU "
                           f"but has {have.get('memory', 0) / MIB:,.0f} MiB for them, not {need / MIB:,.0f}: lower "
                           "simulate.client_memory_mb or raise simulate.client_cpus")
        out[str(node["NodeID"])] = n
    if not any(out.values()):
        raise RunError(f"no node of the Ray cluster has room for one ClientApp actor asking for {resources}; "
                       "lower simulate.client_cpus / client_gpus")
    return out


def worker_env(plan_name: str, torch_threads: int) -> dict[str, str]:
    """Environment of every ClientApp worker on the cluster (its raylet's, plus these)."""
    from fedbw.fl.settings import PLAN_ENV, THREADS_ENV

    pythonpath = os.pathsep.join([p for p in sys.path if p] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return {PLAN_ENV: plan_name, THREADS_ENV: str(torch_threads), "PYTHONPATH": pythonpath,
            "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1", "RAY_USAGE_STATS_ENABLED": "0"}


def attach(address: str, plan_path: str, torch_threads: int) -> tempfile.TemporaryDirectory[str]:
    """``ray.init`` on the cluster at ``address`` ("auto" or HOST:PORT) with the plan shipped to its
    workers; returns the temporary directory that holds the shipped copy (clean it up after the run).

    Flower's Ray backend then finds Ray initialised and only builds its actor pool on it."""
    import ray

    from fedbw.fl.settings import PLAN_FILE

    ship = tempfile.TemporaryDirectory(prefix="fedbw-ray-plan-")
    shutil.copyfile(plan_path, Path(ship.name) / PLAN_FILE)
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=True, namespace="fedbw",
                 runtime_env={"working_dir": ship.name, "env_vars": worker_env(PLAN_FILE, torch_threads)})
    except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; the person needs the address and why
        ship.cleanup()
        raise RunError(f"could not attach to the Ray cluster at {address!r}: {type(exc).__name__}: {exc}. "
                       "Is it running (`ray status`), and is this machine one of its nodes?") from None
    return ship


def cluster_nodes() -> list[dict[str, Any]]:
    """The cluster's live nodes, as ``ray.nodes()`` describes them."""
    import ray

    return [n for n in ray.nodes() if n.get("Alive", True)]


def placement_log(run_dir: Path, address: str, nodes: list[dict[str, Any]], actors: dict[str, int]) -> Any:
    """Start ``ray-placement.jsonl`` in ``run_dir`` — a first line with the cluster's nodes (id, address,
    resources, actors), then one line per ClientApp call — and the actor that appends those lines.

    The actor is pinned to this (the driver's) node, so it writes into the run directory itself; it
    has to, because Flower shuts this driver's Ray connection down (and with it the job's actors) as
    soon as the simulation ends."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    path = Path(run_dir) / PLACEMENT_FILE
    head = {"ray_address": address,
            "nodes": [{"node_id": str(n["NodeID"]), "address": n.get("NodeManagerAddress"),
                       "resources": {k: v for k, v in (n.get("Resources") or {}).items() if "node:" not in k},
                       "actors": actors.get(str(n["NodeID"]), 0)} for n in nodes]}
    path.write_text(json.dumps(head) + "\n", encoding="utf-8")
    here = ray.get_runtime_context().get_node_id()
    return ray.remote(_PlacementLog).options(
        num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False)).remote(str(path))


def read_placement(run_dir: Path) -> dict[str, Any] | None:
    """A run's ``ray-placement.jsonl`` as ``{ray_address, nodes, messages: [{round, client_id, node_id}]}``,
    or None for a run on a private Ray."""
    path = Path(run_dir) / PLACEMENT_FILE
    if not path.exists():
        return None
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {**lines[0], "messages": lines[1:]}


def placed(client_app: Any, log: Any) -> Any:
    """``client_app`` reporting each call's node to ``log`` (a :func:`placement_log` actor)."""
    from flwr.clientapp import ClientApp

    class PlacedClientApp(ClientApp):
        """Runs the app, then reports (round, client, node) and waits for the report to land, so the
        list is complete when the run ends."""

        def __init__(self, inner: Any, log: Any) -> None:
            super().__init__()
            self._inner, self._log = inner, log

        def __call__(self, message: Any, context: Any) -> Any:
            import ray

            reply = self._inner(message=message, context=context)
            group = message.metadata.group_id
            ray.get(self._log.note.remote(int(group) if group.isdigit() else group,
                                          int(context.node_config["partition-id"]),
                                          ray.get_runtime_context().get_node_id()))
            return reply

    return PlacedClientApp(client_app, log)


class _PlacementLog:
    """Appends one JSON line per ClientApp call (a Ray actor; see :func:`placement_log`)."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the actor's life

    def note(self, round_: Any, client_id: int, node_id: str) -> None:
        self._file.write(json.dumps({"round": round_, "client_id": client_id, "node_id": node_id}) + "\n")
        self._file.flush()
