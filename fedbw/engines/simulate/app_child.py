"""The simulation process for any Flower app: its own components, wrapped, in Flower's Simulation Engine.

``fedbw simulate --app`` starts this module as a child in its own session (like :mod:`.child` for fedbw's
apps) so that it can always stop the whole tree. Ray is started here first, so that the SIGTERM/SIGINT
handlers installed afterwards are fedbw's, not Ray's.

Usage: ``python -m fedbw.engines.simulate.app_child SPEC_JSON`` (SPEC: app_dir, clients, overrides,
events_path, actors).
"""

from __future__ import annotations

import json
import os
import sys

from fedbw.engines.simulate.child import LOOPBACK, interrupt_on_signals, run_and_leave


def main(argv: list[str]) -> None:
    run_and_leave(lambda: _simulate(json.loads(open(argv[1], encoding="utf-8").read())))


def _simulate(spec: dict) -> None:
    import ray

    os.environ.pop("RAY_ADDRESS", None)  # never attach to a cluster by accident
    actors = int(spec["actors"])
    sys.path.insert(0, spec["app_dir"])  # Ray's workers import the app's modules from this path
    ray.init(num_cpus=actors, include_dashboard=False, logging_level="ERROR", log_to_driver=True,
             _node_ip_address=LOOPBACK, runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path)}})
    interrupt_on_signals()  # ray.init replaced SIGTERM's handler with sys.exit
    from fedbw.fl.foreign import run_in_simulation

    backend = {"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, "init_args": {"num_cpus": actors}}
    run_in_simulation(spec["app_dir"], int(spec["clients"]), spec["events_path"], spec["overrides"], backend)


if __name__ == "__main__":
    main(sys.argv)
