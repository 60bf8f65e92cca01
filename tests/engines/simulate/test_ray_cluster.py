"""simulate on an existing Ray cluster: the config key and flag, the actor pool's fit, and (slow) a real
two-node cluster — each node a network host of its own — whose records equal a local run's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fedbw.config import config_from_dict
from fedbw.engines.simulate import flower_env
from fedbw.engines.simulate.child import backend_config
from fedbw.engines.simulate.cluster import actors_per_node, client_resources, read_placement, worker_env
from fedbw.errors import ConfigError, RunError

ROOT = Path(__file__).resolve().parents[3]
RAY = str(Path(sys.executable).parent / "ray")
FEDBW = str(Path(sys.executable).parent / "fedbw")
GIB = 2**30


# ------------------------------------------------------------------------------------------- config


@pytest.mark.parametrize("address", ["auto", "10.0.0.1:6379", "head.cluster:10001"])
def test_ray_address_accepts_auto_and_host_port(address: str) -> None:
    assert config_from_dict({"simulate": {"ray_address": address}}).simulate.ray_address == address


@pytest.mark.parametrize("address,why", [("10.0.0.1", "HOST:PORT"), ("head:0", "HOST:PORT"),
                                         (":6379", "HOST:PORT"), ("ray://head:10001", "Ray Client")])
def test_a_bad_ray_address_names_the_key_and_what_to_write(address: str, why: str) -> None:
    with pytest.raises(ConfigError, match=rf"simulate\.ray_address: .*{why}"):
        config_from_dict({"simulate": {"ray_address": address}})


def test_by_default_no_cluster_and_one_cpu_per_client() -> None:
    sim = config_from_dict({}).simulate
    assert (sim.ray_address, sim.client_cpus, sim.client_gpus, sim.client_memory_mb) == (None, 1.0, None, None)


def test_cli_ray_address_refuses_bad_addresses_and_other_engines(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from fedbw.cli import app

    res = CliRunner().invoke(app, ["run", str(ROOT / "experiments/quickstart.toml"), "--engine", "estimate",
                                   "--ray-address", "10.0.0.1:6379", "--set", f'output_dir="{tmp_path}"'])
    assert res.exit_code == 2 and "--ray-address runs the simulate engine" in res.output
    res = CliRunner().invoke(app, ["run", str(ROOT / "experiments/quickstart.toml"), "--ray-address", "nowhere"])
    assert res.exit_code == 2 and "simulate.ray_address" in res.output and "Traceback" not in res.output


# ------------------------------------------------------------------------------ environment, resources


def test_a_private_ray_never_attaches_by_accident(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "10.9.9.9:6379")
    monkeypatch.setenv("RAY_TMPDIR", "/somewhere")
    private = flower_env(tmp_path)
    assert "RAY_ADDRESS" not in private and private["RAY_TMPDIR"] == str(tmp_path / "ray")
    attached = flower_env(tmp_path, ray_cluster=True)  # explicit: Ray's "auto" finds the person's cluster
    assert attached["RAY_ADDRESS"] == "10.9.9.9:6379" and attached["RAY_TMPDIR"] == "/somewhere"
    assert attached["FLWR_TELEMETRY_ENABLED"] == "0" and attached["RAY_USAGE_STATS_ENABLED"] == "0"


def test_private_ray_sizes_cpus_gpus_and_memory_from_the_client_resources() -> None:
    plain = backend_config("cpu", 10**6, actors=4)
    assert plain["init_args"]["num_cpus"] == 4 and plain["client_resources"] == {"num_cpus": 1.0, "num_gpus": 0.0}
    two = backend_config("cpu", 10**6, actors=3, client_cpus=2, client_memory_mb=512)
    assert two["init_args"]["num_cpus"] == 6 and two["client_resources"]["memory"] == 512 * 2**20
    assert two["init_args"]["_memory"] == 3 * 512 * 2**20
    cuda = backend_config("cuda", 10**6, actors=4)
    assert cuda["client_resources"]["num_gpus"] == 0.25 and cuda["init_args"]["num_gpus"] == 1
    assert backend_config("cuda", 10**6, actors=4, client_gpus=0.5)["client_resources"]["num_gpus"] == 0.5
    assert backend_config("cpu", 10**6, actors=4, client_gpus=0.5)["client_resources"]["num_gpus"] == 0.0


def _node(nid: str, cpus: float, memory_gib: float = 8, gpus: float = 0, alive: bool = True) -> dict:
    res = {"CPU": cpus, "memory": memory_gib * GIB, **({"GPU": gpus} if gpus else {})}
    return {"NodeID": nid, "Alive": alive, "NodeManagerAddress": f"10.0.0.{nid}", "Resources": res}


def test_actors_per_node_follows_flowers_rule_and_refuses_what_would_hang() -> None:
    nodes = [_node("1", 4), _node("2", 2, gpus=1), _node("3", 8, alive=False)]
    assert actors_per_node(nodes, client_resources(1, None, None, 0.0)) == {"1": 4, "2": 2}
    assert actors_per_node(nodes, client_resources(1, 0.5, None, 0.0)) == {"1": 0, "2": 2}
    # Flower's pool ignores memory: 4 actors of 3 GiB on an 8 GiB node would wait forever
    with pytest.raises(RunError, match="client_memory_mb"):
        actors_per_node(nodes, client_resources(1, None, 3 * 1024, 0.0))
    with pytest.raises(RunError, match="no node of the Ray cluster has room"):
        actors_per_node(nodes, client_resources(16, None, None, 0.0))


def test_workers_get_the_plan_by_name_threads_and_no_telemetry() -> None:
    env = worker_env("plan.json", 2)
    assert env["FEDBW_PLAN"] == "plan.json" and env["FEDBW_TORCH_THREADS"] == "2"
    assert env["FLWR_TELEMETRY_ENABLED"] == "0" and env["FLWR_DISABLE_UPDATE_CHECK"] == "1"
    assert [p for p in sys.path if p] == env["PYTHONPATH"].split(os.pathsep)[:len([p for p in sys.path if p])]


# ------------------------------------------------------------------------ a real two-node cluster (slow)

#: Real training on digits, small enough for 2 busy cores: 6 clients, 4 per round, 2 rounds.
CONFIG_TOML = """
name = "ray-cluster"
engine = "simulate"
seed = 7
device = "cpu"
[model]
name = "small-cnn"
[data]
dataset = "digits"
[clients]
total = 6
per_round = 4
compute = "real"
[training]
rounds = 2
local_epochs = 1
[network]
mix = [{ profile = "home-30", share = 1 }, { profile = "home-80", share = 1 }]
"""
ROUNDS, PER_ROUND = 2, 4


def _varint_len(n: int) -> int:
    length = 1
    while n >= 128:
        n >>= 7
        length += 1
    return length


def _events(run_dir: Path) -> tuple[dict[str, int], dict[tuple[int, int], dict]]:
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    node_of = next(e["node_of"] for e in events if e["event"] == "nodes")
    return node_of, {(e["round"], e["client_id"]): e for e in events if e["event"] == "message"}


def _only_run(out: Path) -> Path:
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    return run


@pytest.fixture()
def two_node_cluster(tmp_path: Path):
    """A head and a worker node, each in its own network namespace (its own address and loopback),
    with their own resources; yields (network, head address, worker's expected CPUs). Every process
    either ``ray start`` left behind is stopped by the supervisor (by process group), and checked gone."""
    import psutil

    from fedbw import netns
    from fedbw.processes import Supervisor

    if (why := netns.unavailable()) is not None:
        pytest.skip(why)
    ray_tmp = Path(f"/tmp/fbray{os.getpid()}")  # Ray's socket paths must stay under 107 bytes
    ray_tmp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_TMPDIR=str(ray_tmp), RAY_USAGE_STATS_ENABLED="0", FLWR_TELEMETRY_ENABLED="0",
               FLWR_DISABLE_UPDATE_CHECK="1", PYTHONPATH=str(ROOT))
    seen: set[int] = set()
    with netns.HostNetwork(["head", "worker"]) as net, Supervisor() as sup:
        head = net.address("head")
        common = ["--block", "--disable-usage-stats", "--object-store-memory", str(128 * 2**20)]
        nodes = [
            sup.start("ray-head", net.argv("head", [RAY, "start", "--head", "--node-ip-address", head, "--port", "6379",
                                                    "--include-dashboard", "false", "--num-cpus", "1",
                                                    "--resources", '{"head_host": 1}', *common]),
                      env, tmp_path / "ray-head.log", stamp=False)]
        nodes[0].wait_for_line("Ray runtime started", 120)
        nodes.append(sup.start("ray-worker", net.argv("worker", [
            RAY, "start", "--address", f"{head}:6379", "--node-ip-address", net.address("worker"), "--num-cpus", "2",
            "--resources", '{"worker_host": 1}', *common]), env, tmp_path / "ray-worker.log", stamp=False))
        nodes[1].wait_for_line("Ray runtime started", 120)
        try:
            yield net, head, env
        finally:
            for node in nodes:
                seen |= {node.pid, *(p.pid for p in psutil.Process(node.pid).children(recursive=True))}
    alive = [p for p in seen if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"Ray processes still running after the cluster stopped: {alive}"
    import shutil

    shutil.rmtree(ray_tmp, ignore_errors=True)


@pytest.mark.slow
def test_simulate_on_a_two_node_ray_cluster_equals_a_local_run(two_node_cluster, tmp_path: Path) -> None:
    net, head, env = two_node_cluster
    config = tmp_path / "ray-cluster.toml"
    config.write_text(CONFIG_TOML)
    out = f'output_dir="{tmp_path / "cluster-runs"}"'
    proc = subprocess.run(net.argv("head", [FEDBW, "run", str(config), "--ray-address", f"{head}:6379", "--set", out,
                                            "--json"]), env=env, capture_output=True, text=True, timeout=540)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    cluster_run = _only_run(tmp_path / "cluster-runs")

    # clients landed on both nodes: the node of every ClientApp call, by Ray node id
    placement = read_placement(cluster_run)
    assert placement is not None and placement["ray_address"] == f"{head}:6379"
    by_address = {n["address"]: n for n in placement["nodes"]}
    assert set(by_address) == {head, net.address("worker")}
    assert by_address[head]["resources"]["CPU"] == 1 and by_address[net.address("worker")]["resources"]["CPU"] == 2
    # Flower's pool: as many one-CPU actors as fit on each node
    assert (by_address[head]["actors"], by_address[net.address("worker")]["actors"]) == (1, 2)
    trained = [m for m in placement["messages"] if isinstance(m["round"], int) and m["round"] >= 1]
    assert len(trained) == ROUNDS * PER_ROUND
    assert {m["node_id"] for m in trained} == {n["node_id"] for n in placement["nodes"]}

    # the same config and seed on a private local Ray
    from fedbw.runner import run_experiment

    from fedbw.config import load_config

    local = run_experiment(load_config(config, [f'output_dir="{tmp_path / "local-runs"}"']))
    from fedbw.results.records import load_records

    (c_clients, c_rounds), (l_clients, l_rounds) = load_records(cluster_run), load_records(local.run_dir)
    assert [r.round for r in c_rounds] == [r.round for r in l_rounds] == [1, 2]
    for a, b in zip(c_rounds, l_rounds):  # real training, torch threads = the CPUs each actor holds (1)
        assert (a.loss, a.accuracy, a.num_clients) == (b.loss, b.accuracy, b.num_clients)
    key = lambda c: (c.round, c.client_id)  # noqa: E731
    assert [key(c) for c in sorted(c_clients, key=key)] == [key(c) for c in sorted(l_clients, key=key)]
    for a, b in zip(sorted(c_clients, key=key), sorted(l_clients, key=key)):
        assert (a.train_loss, a.num_examples, a.profile) == (b.train_loss, b.num_examples, b.profile)

    # bytes: equal once the widths of Flower's random ids are counted. Every message carries its node's
    # 64-bit id and the run's id as protobuf varints, drawn from os.urandom per run (two local runs
    # differ the same way): bytes(cluster) − bytes(local) = Δwidth(node id) + one constant (run id)
    c_nodes, c_msgs = _events(cluster_run)
    l_nodes, l_msgs = _events(local.run_dir)
    assert c_msgs.keys() == l_msgs.keys()
    residuals = set()
    for (rnd, cid), a in c_msgs.items():
        b = l_msgs[(rnd, cid)]
        width = _varint_len(c_nodes[str(cid)]) - _varint_len(l_nodes[str(cid)])
        residuals |= {a["bytes_down"] - b["bytes_down"] - width, a["bytes_up"] - b["bytes_up"] - width}
    assert len(residuals) == 1 and abs(residuals.pop()) <= 2, residuals
    records_of = {key(c): c for c in c_clients}
    assert all(records_of[k].bytes_down == m["bytes_down"] and records_of[k].bytes_up == m["bytes_up"]
               for k, m in c_msgs.items())
