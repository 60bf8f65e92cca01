"""simulate engine benchmarks: fedbw's overhead, scale, and estimate-vs-measured bytes.

    .venv/bin/python benchmarks/simulate.py [overhead] [scale100] [scale1000] [bytes]

* overhead  — wall time per round of the fedbw run vs the same Flower apps with fedbw's measurement
              off (no message sizing, no client mod): what fedbw adds to a bare Flower run.
* scale100  — 100 clients per round, real training of the small CNN on digits.
* scale1000 — 1,000 clients per round in synthetic-compute mode.
* bytes     — per-client bytes predicted by the estimate engine vs measured by simulate (plain FedAvg:
              small-cnn real, resnet18 synthetic; stock SecAgg+ per stage for reference).

Prints tables and writes benchmarks/results/simulate.json; run directories go under
benchmarks/results/runs/. Peak memory is the largest sum of RSS over the simulation's process group
(Flower, Ray's GCS/raylet and actors) sampled every 0.2 s, plus this process; shared pages (Ray's
object store) count once per process that maps them, so it is an upper bound.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from fedbw.config import config_from_dict
from fedbw.engines.estimate import run_estimate
from fedbw.engines.simulate import run_simulate
from fedbw.plan import build_plan
from fedbw.results.records import RecordWriter

OUT = Path(__file__).resolve().parent / "results"
PAGE = os.sysconf("SC_PAGE_SIZE")

BASE: dict[str, Any] = {
    "engine": "simulate", "device": "auto", "seed": 0,
    "model": {"name": "small-cnn"}, "data": {"dataset": "digits"},
    "clients": {"total": 10, "per_round": 5, "compute": "real"},
    "training": {"rounds": 6, "local_epochs": 1},
    "network": {"mix": [{"profile": "home-30", "share": 1}, {"profile": "home-50", "share": 1},
                        {"profile": "home-80", "share": 1}]},
}


def config(name: str, **sections: dict) -> Any:
    data = json.loads(json.dumps(BASE))
    for k, v in sections.items():
        data.setdefault(k, {}).update(v) if isinstance(v, dict) else data.__setitem__(k, v)
    data["name"] = name
    data["output_dir"] = str(OUT / "runs")
    return config_from_dict(data)


class PeakRss(threading.Thread):
    """Peak summed RSS of this process plus the simulation child's process group."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_bytes = 0
        self._halt = threading.Event()

    @staticmethod
    def _stat(pid: str) -> tuple[int, int, int] | None:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
            return int(fields[1]), int(fields[2]), rss_pages * PAGE  # ppid, pgrp, rss
        except (OSError, IndexError, ValueError):
            return None

    def sample(self) -> int:
        me = os.getpid()
        procs = {p: s for p in os.listdir("/proc") if p.isdigit() and (s := self._stat(p))}
        groups = {int(p) for p, (ppid, _, _) in procs.items() if ppid == me}  # our children lead their groups
        return sum(rss for p, (ppid, pgrp, rss) in procs.items() if pgrp in groups or int(p) == me)

    def run(self) -> None:
        while not self._halt.is_set():
            self.peak_bytes = max(self.peak_bytes, self.sample())
            self._halt.wait(0.2)

    def stop(self) -> int:
        self._halt.set()
        self.join()
        return self.peak_bytes


def simulate(cfg: Any, measure: bool = True) -> dict[str, Any]:
    from fedbw.results.rundir import new_run_dir

    plan = build_plan(cfg)
    run_dir = new_run_dir(cfg, "simulate")
    sampler = PeakRss()
    sampler.start()
    t0 = time.perf_counter()
    with RecordWriter(run_dir / "records.jsonl") as w:
        result = run_simulate(plan, run_dir.name, w, measure=measure)
    total_s = time.perf_counter() - t0
    peak = sampler.stop()
    walls = [r.wall_time_s for r in result.rounds]
    steady = walls[1:] or walls  # round 1 includes Ray actors importing torch and building the model
    return {"run_dir": str(run_dir), "rounds": len(walls), "clients_per_round": cfg.clients.per_round,
            "total_wall_s": total_s, "round_wall_s": walls, "steady_round_wall_s": statistics.median(steady),
            "peak_rss_bytes": peak, "records": result}


def overhead(pairs: int = 2) -> dict[str, Any]:
    """Alternate fedbw and baseline runs (the machine may be shared): median of all steady rounds."""
    rounds = {"rounds": 12}
    runs: dict[str, list[dict[str, Any]]] = {"fedbw": [], "bare": []}
    for _ in range(pairs):
        runs["fedbw"].append(simulate(config("bench-overhead", training=rounds), measure=True))
        runs["bare"].append(simulate(config("bench-bare", training=rounds), measure=False))
    med = {k: statistics.median(w for r in v for w in r["round_wall_s"][1:]) for k, v in runs.items()}
    total = {k: statistics.median(r["total_wall_s"] for r in v) for k, v in runs.items()}
    ratio = med["fedbw"] / med["bare"]
    print(f"overhead: fedbw {med['fedbw']:.3f} s/round vs bare {med['bare']:.3f} s/round → {ratio:.2f}× "
          f"(median total {total['fedbw']:.1f} s vs {total['bare']:.1f} s, {pairs} runs each, load average "
          f"{os.getloadavg()[0]:.1f})")
    return {"fedbw": [_strip(r) for r in runs["fedbw"]], "bare": [_strip(r) for r in runs["bare"]],
            "steady_round_wall_s": med, "median_total_wall_s": total, "ratio": ratio}


def scale(n: int, compute: str, rounds: int) -> dict[str, Any]:
    cfg = config(f"bench-scale{n}", clients={"total": n, "per_round": n, "compute": compute},
                 training={"rounds": rounds})
    r = simulate(cfg)
    print(f"scale {n}/round ({compute}): {r['steady_round_wall_s']:.2f} s/round (rounds {_fmt(r['round_wall_s'])}), "
          f"total {r['total_wall_s']:.1f} s, peak RSS {r['peak_rss_bytes'] / 2**30:.2f} GiB, "
          f"load average {os.getloadavg()[0]:.1f}")
    return _strip(r)


def bytes_agreement() -> dict[str, Any]:
    """Mean bytes per client, stage and direction: the estimate engine's prediction vs simulate's measurement
    (over both rounds, and per round: stock SecAgg+ sends the float64 aggregate from round 2 on)."""
    from fedbw.calibration.file import load_costs, model_stamp

    rows, cases_out = [], []
    cases = [("small-cnn real", config("bench-bytes-cnn", training={"rounds": 2})),
             ("resnet18 synthetic", config("bench-bytes-resnet18", model={"name": "resnet18"},
                                          clients={"total": 4, "per_round": 2, "compute": "synthetic"},
                                          training={"rounds": 2})),
             ("small-cnn SecAgg+ synthetic", config("bench-bytes-secagg", clients={"total": 3, "per_round": 3,
                                                                                 "compute": "synthetic"},
                                                   training={"rounds": 2},
                                                   privacy={"secagg": {"enabled": True}}))]
    for label, cfg in cases:
        measured = simulate(cfg)["records"]
        plan = build_plan(cfg)
        predicted = run_estimate(plan, "estimate")
        cases_out.append({"case": label, "model": plan.model.name, "params": plan.model.params,
                          "arrays": plan.num_arrays, "compute": cfg.clients.compute,
                          "clients_per_round": cfg.clients.per_round, "rounds": plan.rounds,
                          "secagg": cfg.privacy.secagg.mode if cfg.privacy.secagg.enabled else None})
        rounds = sorted({c.round for c in measured.clients})
        for kind, pick in (("down", lambda s: s.bytes_down), ("up", lambda s: s.bytes_up)):
            for stage in [s.stage for s in measured.clients[0].stages]:
                def mean(result: Any, rnd: int | None = None) -> float:
                    return statistics.mean(pick(s) for c in result.clients for s in c.stages
                                           if s.stage == stage and (rnd is None or c.round == rnd))
                m, p = mean(measured), mean(predicted)
                rows.append({"case": label, "stage": stage, "direction": kind, "predicted_bytes": p,
                             "measured_bytes": m, "diff_pct": 100 * (p - m) / m,
                             "predicted_by_round": [mean(predicted, r) for r in rounds],
                             "measured_by_round": [mean(measured, r) for r in rounds]})
    print(f"{'case':30} {'stage':24} {'dir':5} {'estimate B':>12} {'simulate B':>12} {'diff':>8}")
    for r in rows:
        print(f"{r['case']:30} {r['stage']:24} {r['direction']:5} {r['predicted_bytes']:12,.0f} "
              f"{r['measured_bytes']:12,.0f} {r['diff_pct']:+7.2f}%")
    return {"cases": cases_out, "rows": rows, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": machine(), "made_by": model_stamp(load_costs(None))}


def machine() -> str:
    mem = os.sysconf("SC_PHYS_PAGES") * PAGE / 2**30
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {mem:.0f} GiB, shared"


def _strip(r: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in r.items() if k != "records"}


def _fmt(xs: list[float]) -> str:
    return ", ".join(f"{x:.2f}" for x in xs)


def main(argv: list[str]) -> None:
    wanted = argv or ["overhead", "scale100", "scale1000", "bytes"]
    OUT.mkdir(parents=True, exist_ok=True)
    import torch

    from fedbw.calibration.file import load_costs, model_stamp

    unknown = set(wanted) - {"overhead", "scale100", "scale1000", "bytes"}
    if unknown:
        raise SystemExit(f"unknown mode(s) {', '.join(sorted(unknown))}; choose from overhead, scale100, "
                         "scale1000, bytes")
    # bytes also stamps its own part (date, machine, made_by): a later run of another mode rewrites these
    out: dict[str, Any] = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                       "cuda": torch.cuda.is_available()},
                           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "made_by": model_stamp(load_costs(None)),
                           "command": ".venv/bin/python benchmarks/simulate.py"}
    if "overhead" in wanted:
        out["overhead"] = overhead()
    if "scale100" in wanted:
        out["scale100"] = scale(100, "real", 3)
    if "scale1000" in wanted:
        out["scale1000"] = scale(1000, "synthetic", 2)
    if "bytes" in wanted:
        out["bytes"] = bytes_agreement()
    path = OUT / "simulate.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    old.update(out)
    path.write_text(json.dumps(old, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
