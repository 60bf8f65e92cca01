"""The simulation process: Flower's Simulation Engine (Ray) running fedbw's apps, nothing else.

``simulate`` starts this module as a child in its own session so that it can always stop the whole
tree (the child, Ray's GCS, raylet and actors) by process group. Ray and the ServerApp thread are
shut down here on success, failure and SIGTERM/SIGINT; the process then leaves with ``os._exit`` so
no non-daemon Flower thread can keep it alive.

Usage: ``python -m fedbw.engines.simulate.child PLAN_JSON``
"""

from __future__ import annotations

import math
import os
import signal
import sys
import traceback
from collections.abc import Callable

#: Ray actors (ClientApp workers) to run. Default: real training min(CPUs, 4), one core each, so measured
#: compute is not inflated by oversubscription; synthetic compute min(2 × CPUs, 8), because a message's
#: time in Flower's Ray transport is mostly waiting and more actors overlap it (1,000 synthetic clients
#: per round on 2 cores: 40 s/round with 2 actors, 20 s with 4, 16 s with 8; docs/simulate.md).
ACTORS_ENV = "FEDBW_SIM_ACTORS"
#: Ray's node address: this machine's loopback, never another interface.
LOOPBACK = "127.0.0.1"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


#: "1": the ServerApp asks every node for its partition id, as fedbw did before it took the Simulation
#: Engine's own mapping (benchmarks/scale.py's ``setup`` case measures both side by side)
ASK_NODES_ENV = "FEDBW_SIMULATE_ASK_NODES"


def actor_count(synthetic: bool = False) -> int:
    if (v := os.environ.get(ACTORS_ENV)):
        return max(1, int(v))
    cpus = os.cpu_count() or 1
    return max(1, min(2 * cpus, 8) if synthetic else min(cpus, 4))


def backend_config(device: str, model_bytes: int, actors: int, client_cpus: float = 1.0,
                   client_gpus: float | None = None, client_memory_mb: int | None = None) -> dict:
    """A private Ray sized to this machine: ``actors`` ClientApp actors of ``client_cpus`` (logical)
    CPUs each, a GPU share each on CUDA (1 / actors unless ``client_gpus`` says otherwise)."""
    from fedbw.engines.simulate.cluster import client_resources

    init_args = {"num_cpus": max(1, math.ceil(actors * client_cpus)), "include_dashboard": False,
                 "logging_level": "ERROR", "log_to_driver": True, "_node_ip_address": LOOPBACK,
                 # Messages pass through Ray's object store; leave room for a few of them.
                 "object_store_memory": max(512 * 2**20, 8 * model_bytes)}
    cuda = device == "cuda"
    resources = client_resources(client_cpus, client_gpus if cuda else 0.0, client_memory_mb,
                                 default_gpus=1.0 / actors if cuda else 0.0)
    if resources["num_gpus"] > 0:
        init_args["num_gpus"] = 1
    if "memory" in resources:
        init_args["_memory"] = int(resources["memory"] * actors)
    return {"init_args": init_args, "client_resources": resources}


def interrupt_on_signals() -> None:
    """SIGTERM and SIGINT raise KeyboardInterrupt, so that :func:`run_and_leave` shuts Ray down."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)


def run_and_leave(body: Callable[[], None]) -> None:
    """Run a simulation process's ``body``; whatever happens, shut Ray down and leave (130 when
    interrupted, 1 with the traceback in the log on an error)."""
    code = 0
    try:
        body()
    except KeyboardInterrupt:
        code = 130
        print("fedbw simulation: interrupted", file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the parent reads the log; exit non-zero
        code = 1
        traceback.print_exc()
    finally:
        leave(code)


def main(argv: list[str]) -> None:
    interrupt_on_signals()
    run_and_leave(lambda: _simulate(argv[1]))


def _simulate(plan_path: str) -> None:
    """Flower's Simulation Engine on fedbw's apps for the plan in ``plan_path``: on a private Ray, or
    on the Ray cluster the config names (``simulate.ray_address``)."""
    from fedbw.fl.settings import PLAN_ENV, load_settings

    os.environ[PLAN_ENV] = plan_path  # inherited by a private Ray's workers (run_simulation passes no run_config)
    settings = load_settings(plan_path)
    if settings.config.simulate.ray_address:
        _simulate_on_cluster(plan_path, settings)
        return
    sim = settings.config.simulate
    actors = actor_count(settings.synthetic)
    os.environ.setdefault("FEDBW_TORCH_THREADS", str(max(1, (os.cpu_count() or 1) // actors)))

    from flwr.simulation import run_simulation

    from fedbw.fl import node_map
    from fedbw.fl.client_app import app as client_app
    from fedbw.fl.server_app import app as server_app

    if os.environ.get(ASK_NODES_ENV) != "1":  # the ServerApp learns node ↔ client from the engine
        node_map.install()
    run_simulation(server_app=server_app, client_app=client_app,
                   num_supernodes=settings.config.clients.total,
                   backend_config=backend_config(settings.device, settings.plan.model.float32_bytes, actors,
                                                 sim.client_cpus, sim.client_gpus, sim.client_memory_mb))


def _simulate_on_cluster(plan_path: str, settings) -> None:
    """Attach to the cluster, run there with the actor pool Flower fits onto its nodes, and write
    ``ray-placement.jsonl`` (the nodes, and the node of every ClientApp call) into the run directory."""
    from fedbw.engines.simulate import cluster

    sim = settings.config.simulate
    threads = max(1, int(sim.client_cpus))  # a worker trains with the CPUs Ray gave it
    os.environ.setdefault("FEDBW_TORCH_THREADS", str(threads))
    ship = cluster.attach(sim.ray_address, plan_path, threads)
    try:
        interrupt_on_signals()  # ray.init replaced SIGTERM's handler with sys.exit
        resources = cluster.client_resources(sim.client_cpus, sim.client_gpus, sim.client_memory_mb, default_gpus=0.0)
        nodes = cluster.cluster_nodes()
        actors = cluster.actors_per_node(nodes, resources)
        log = cluster.placement_log(settings.run_dir, sim.ray_address, nodes, actors)

        from flwr.simulation import run_simulation

        from fedbw.fl import node_map
        from fedbw.fl.client_app import app as client_app
        from fedbw.fl.server_app import app as server_app

        if os.environ.get(ASK_NODES_ENV) != "1":
            node_map.install()
        run_simulation(server_app=server_app, client_app=cluster.placed(client_app, log),
                       num_supernodes=settings.config.clients.total,
                       backend_config={"client_resources": resources})
    finally:
        ship.cleanup()


def leave(code: int) -> None:
    """Shut Ray down (its GCS, raylet and actors), flush, and exit without waiting for any thread."""
    try:
        import ray

        if ray.is_initialized():
            ray.shutdown()
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv)
