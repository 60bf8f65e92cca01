"""Scale, measured: simulate with synthetic compute at 1,000 and 5,000 clients per round, sampled from
10,000, and the estimate engine at 100,000 clients per round.

    .venv/bin/python benchmarks/scale.py [sim1000] [sim5000] [estimate] [setup]

* sim1000     — 1,000 of 10,000 clients per round, synthetic compute (mlp), 3 rounds; beside it the same
                run with fedbw's measurement off (Flower's apps bare), so fedbw's own share is a
                difference measured side by side.
* sim5000     — 5,000 of 10,000 clients per round, 2 rounds (fedbw only: a bare twin would double a
                run of several minutes on 2 cores).
* setup       — what a simulate run costs besides its rounds (issue 32.6): 10 clients per round from populations
                of 10,000 and 100,000, 2 rounds, synthetic compute: the run's whole wall time, its rounds'
                wall time, and the rest (Ray's start, the Simulation Engine registering every node, the first
                round's actors, tear-down). At 10,000 also the same run the way fedbw did it before: the
                ServerApp asking every node for its partition id (``FEDBW_SIMULATE_ASK_NODES=1``), side by side.
* estimate    — the estimate engine at 1,000, 10,000 and 100,000 clients per round (twice the clients
                in total): wall and CPU time of the plan and of the engine, each, and of writing the
                run's records.jsonl.

Where the simulate cost goes is read from the processes themselves (psutil, every 0.5 s): CPU seconds
and peak resident memory of the simulation driver (Flower's Simulation Engine and ServerApp, with
fedbw's measurement), of Ray's ClientApp actors (Flower's ClientApp in Ray workers) and of Ray's own
processes (GCS, raylet, agents). Per-round times are each round record's ``wall_time_s``; round 1
includes the actors' start, so the steady figure is the median of rounds 2 and later.

Each case replaces its own entry in benchmarks/results/scale.json; docs/simulate.md's scale table is
generated from it (`fedbw docs`).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from fedbw.config import config_from_dict
from fedbw.engines.estimate import run_estimate
from fedbw.engines.simulate import run_simulate
from fedbw.plan import build_plan
from fedbw.results.records import RecordWriter

OUT = Path(__file__).resolve().parent / "results"
RESULT = OUT / "scale.json"
TOTAL = 10_000
KINDS = ("driver", "ray actors", "ray system")


def sim_config(per_round: int, rounds: int, total: int = TOTAL, engine: str = "simulate") -> Any:
    return config_from_dict({
        "name": f"scale-{per_round}", "engine": engine, "device": "cpu", "seed": 0, "output_dir": str(OUT / "runs"),
        "model": {"name": "mlp"}, "data": {"dataset": "digits"},
        "clients": {"total": total, "per_round": per_round, "compute": "synthetic"},
        "training": {"rounds": rounds, "local_epochs": 1},
        "network": {"mix": [{"profile": "home-30", "share": 1}, {"profile": "home-80", "share": 1}]}})


def kind_of(proc: psutil.Process) -> str:
    """Which part of the stack a process of the simulation belongs to."""
    try:
        cmd = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "ray system"
    if "fedbw.engines.simulate.child" in cmd:
        return "driver"
    return "ray actors" if cmd.startswith("ray::") else "ray system"


class StackSampler(threading.Thread):
    """CPU seconds per kind (each process's last reading, so processes that exit still count) and the
    peak summed RSS of every descendant of this process, with its split by kind at the peak."""

    def __init__(self, every_s: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.every_s = every_s
        self.cpu: dict[int, tuple[str, float]] = {}
        self.peak_rss, self.peak_by_kind = 0, {k: 0 for k in KINDS}
        self._kinds: dict[int, str] = {}
        self._halt = threading.Event()

    def sample(self) -> None:
        rss = {k: 0 for k in KINDS}
        for proc in psutil.Process().children(recursive=True):
            try:
                # a Ray worker starts as Ray's worker script and renames itself ray::… later: cache the
                # kind only once it is final
                kind = self._kinds.get(proc.pid) or kind_of(proc)
                if kind != "ray system":
                    self._kinds[proc.pid] = kind
                with proc.oneshot():
                    t = proc.cpu_times()
                    rss[kind] += proc.memory_info().rss
                self.cpu[proc.pid] = (kind, t.user + t.system)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        if sum(rss.values()) > self.peak_rss:
            self.peak_rss, self.peak_by_kind = sum(rss.values()), rss

    def run(self) -> None:
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self.every_s)

    def __enter__(self) -> StackSampler:
        self._t0 = time.perf_counter()
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._halt.set()
        self.join()
        self.wall_s = time.perf_counter() - self._t0

    def summary(self) -> dict[str, Any]:
        """CPU seconds and peak memory by kind, and the wall time sampled (after the ``with``)."""
        cpu = {k: sum(s for kind, s in self.cpu.values() if kind == k) for k in KINDS}
        return {"cpu_s": cpu, "peak_rss_bytes": self.peak_rss, "peak_rss_by_kind": self.peak_by_kind,
                "wall_s": self.wall_s}


def simulate_once(per_round: int, rounds: int, measure: bool, total: int = TOTAL) -> dict[str, Any]:
    from fedbw.results.rundir import new_run_dir

    cfg = sim_config(per_round, rounds, total)
    run_dir, load0 = new_run_dir(cfg, "simulate"), os.getloadavg()[0]
    with StackSampler() as sampler, RecordWriter(run_dir / "records.jsonl") as writer:
        result = run_simulate(build_plan(cfg), run_dir.name, writer, measure=measure)
    stack = sampler.summary()
    walls = [r.wall_time_s for r in result.rounds]
    steady = statistics.median(walls[1:] or walls)
    return {"measure": measure, "clients_per_round": per_round, "clients_total": total, "rounds": len(walls),
            "round_wall_s": walls, "steady_round_wall_s": steady, "ms_per_client": 1000 * steady / per_round,
            "total_wall_s": stack.pop("wall_s"), "load_average": [load0, os.getloadavg()[0]], **stack}


def sim_case(per_round: int, rounds: int, bare: bool) -> dict[str, Any]:
    out = {"fedbw": simulate_once(per_round, rounds, measure=True)}
    if bare:
        out["bare"] = simulate_once(per_round, rounds, measure=False)
        out["fedbw_share"] = 1 - out["bare"]["steady_round_wall_s"] / out["fedbw"]["steady_round_wall_s"]
    _say(per_round, out)
    return out


def setup_case(populations: tuple[int, ...] = (10_000, 100_000), per_round: int = 10) -> dict[str, Any]:
    """A simulate run's time outside its rounds, per population; at the first, also with the hello query."""
    out: dict[str, Any] = {"clients_per_round": per_round, "runs": []}

    def once(total: int, ask_nodes: bool) -> None:
        os.environ["FEDBW_SIMULATE_ASK_NODES"] = "1" if ask_nodes else "0"
        try:
            r = simulate_once(per_round, 2, measure=True, total=total)
        finally:
            os.environ.pop("FEDBW_SIMULATE_ASK_NODES", None)
        rounds_s = sum(r["round_wall_s"])
        row = {"clients_total": total, "ask_nodes": ask_nodes, "total_wall_s": r["total_wall_s"],
               "rounds_wall_s": rounds_s, "outside_rounds_s": r["total_wall_s"] - rounds_s,
               "peak_rss_bytes": r["peak_rss_bytes"], "cpu_s": r["cpu_s"]}
        out["runs"].append(row)
        print(f"simulate {total:,} clients ({'asking every node' if ask_nodes else 'node map from the engine'}): "
              f"{row['total_wall_s']:.1f} s in all, {rounds_s:.1f} s in rounds, {row['outside_rounds_s']:.1f} s "
              f"outside them, peak RSS {row['peak_rss_bytes'] / 2**30:.2f} GiB", flush=True)

    for i, total in enumerate(populations):
        once(total, ask_nodes=False)
        if i == 0:
            once(total, ask_nodes=True)
    return out


#: A fixed pure-Python workload timed before every estimate run: this VM's own speed drifts (a shared
#: host), and the loop's time says how fast the machine was while the run beside it was measured.
REFERENCE_LOOP = 10**7


def reference_loop_s() -> float:
    t0 = time.process_time()
    sum(range(REFERENCE_LOOP))
    return time.process_time() - t0


def estimate_case(per_rounds: tuple[int, ...] = (1_000, 10_000, 100_000), repeats: int = 5) -> dict[str, Any]:
    """Plan + engine at each size, ``repeats`` times side by side (this VM's speed drifts within minutes):
    the row is the median run by wall time, with every run's total and a reference loop beside it."""
    rows = []
    for n in per_rounds:
        runs = []
        for _ in range(repeats):
            reference = reference_loop_s()
            cfg = sim_config(n, 1, total=2 * n, engine="estimate")
            w0, c0 = time.perf_counter(), time.process_time()
            plan = build_plan(cfg)
            w1, c1 = time.perf_counter(), time.process_time()
            result = run_estimate(plan, f"scale-estimate-{n}")
            w2, c2 = time.perf_counter(), time.process_time()
            runs.append({"plan_wall_s": w1 - w0, "plan_cpu_s": c1 - c0, "estimate_wall_s": w2 - w1,
                         "estimate_cpu_s": c2 - c1, "round_time_s": result.rounds[0].round_time_s,
                         "load_average": os.getloadavg()[0], "reference_loop_s": reference})
        totals = [r["plan_wall_s"] + r["estimate_wall_s"] for r in runs]
        row = {"clients_per_round": n, "clients_total": 2 * n,
               **sorted(runs, key=lambda r: r["plan_wall_s"] + r["estimate_wall_s"])[len(runs) // 2],
               "repeats": repeats, "total_wall_s_runs": totals}
        w2, c2 = time.perf_counter(), time.process_time()
        with tempfile.TemporaryDirectory() as tmp, RecordWriter(Path(tmp) / "records.jsonl") as writer:
            writer.write([*result.clients, *result.rounds])  # what `fedbw run` adds: records.jsonl
        w3, c3 = time.perf_counter(), time.process_time()
        row.update(records_write_wall_s=w3 - w2, records_write_cpu_s=c3 - c2)
        rows.append(row)
        print(f"estimate {n:,}/round: plan {row['plan_wall_s']:.2f} s, engine {row['estimate_wall_s']:.2f} s wall "
              f"(median of {repeats}; totals {', '.join(f'{t:.2f}' for t in totals)}); "
              f"records.jsonl {c3 - c2:.2f} s CPU", flush=True)
    return {"rows": rows}


def _say(n: int, case: dict[str, Any]) -> None:
    f = case["fedbw"]
    line = (f"simulate {n:,}/round: {f['steady_round_wall_s']:.1f} s/round (rounds "
            f"{', '.join(f'{w:.1f}' for w in f['round_wall_s'])}), peak RSS {f['peak_rss_bytes'] / 2**30:.2f} GiB, "
            f"CPU s {', '.join(f'{k} {v:.0f}' for k, v in f['cpu_s'].items())}")
    if "bare" in case:
        line += f"; bare {case['bare']['steady_round_wall_s']:.1f} s/round"
    print(line, flush=True)


def machine() -> str:
    mem = psutil.virtual_memory().total / 2**30
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {mem:.0f} GiB, shared"


def main(argv: list[str]) -> None:
    wanted = argv or ["sim1000", "sim5000", "estimate", "setup"]
    unknown = set(wanted) - {"sim1000", "sim5000", "estimate", "setup"}
    if unknown:
        sys.exit(f"unknown case(s) {sorted(unknown)}; choose from sim1000, sim5000, estimate, setup")
    data = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    for case in wanted:
        if case == "sim1000":
            data["sim1000"] = sim_case(1000, 3, bare=True)
        elif case == "sim5000":
            data["sim5000"] = sim_case(5000, 2, bare=False)
        elif case == "setup":
            data["setup"] = setup_case()
        else:
            data["estimate"] = estimate_case()
        data[case]["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        data[case]["machine"] = machine()
        data["command"] = ".venv/bin/python benchmarks/scale.py"
        from fedbw.calibration.file import load_costs, model_stamp

        data[case]["made_by"] = model_stamp(load_costs(None))  # the catalog's calibration, as the cases run
        OUT.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(json.dumps(data, indent=1) + "\n")  # after each case: a later one may not fit


if __name__ == "__main__":
    main(sys.argv[1:])
