"""What a round policy buys on a mixed population (issue 32.2), in the estimate engine: waiting for every
sampled client, a reporting deadline, over-selection (1.3×, FedScale's default), and both.

The population: 100 clients, 40 % on home-30, 30 % on home-80, 20 % on mobile-4g and 10 % on mobile-5g
(the catalog's profiles, docs/catalog.md), 10 clients per round, synthetic compute on the laptop-cpu profile,
Flower's deployment costs with the shipped calibration, 20 rounds. Two models: the small CNN (0.55 MB), whose
messages fit inside one of the ServerApp's 3 s polls, and ResNet-18 (46.8 MB), whose uploads take 10–60 s.

Per model and policy: the mean round with its mean 80 % interval, updates used of clients sampled per round,
the share of sampled clients that were late, their wasted uplink per round, and the hours 1,000 rounds take.
The deadline is set per model to about a home-30 client's exchange (the small CNN: 8 s, ResNet-18: 35 s).

Writes benchmarks/results/round-policies.json (made_by: the model's version and the calibration), which
docs/population.md's table is generated from.

Usage: .venv/bin/python benchmarks/round_policies.py
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "results" / "round-policies.json"
MIX = [{"profile": "home-30", "share": 4}, {"profile": "home-80", "share": 3},
       {"profile": "mobile-4g", "share": 2}, {"profile": "mobile-5g", "share": 1}]
MODELS = {"small-cnn": 8.0, "resnet18": 35.0}  #: model → its deadline (s)
ROUNDS = 20


def policies(deadline_s: float) -> dict[str, dict[str, Any]]:
    return {"wait for all": {}, f"deadline {deadline_s:g} s": {"deadline_s": deadline_s},
            "over-select 1.3×": {"over_select": 1.3},
            f"over-select 1.3× + deadline {deadline_s:g} s": {"over_select": 1.3, "deadline_s": deadline_s}}


def row(model: str, name: str, keys: dict[str, Any]) -> dict[str, Any]:
    from fedbw.config import config_from_dict
    from fedbw.engines.estimate import run_estimate
    from fedbw.plan import build_plan

    cfg = config_from_dict({"name": "round-policies", "engine": "estimate", "seed": 0, "model": {"name": model},
                            "clients": {"total": 100, "per_round": 10, "compute": "synthetic",
                                        "device_profile": "laptop-cpu"},
                            "training": {"rounds": ROUNDS}, "network": {"mix": MIX}, "round": keys})
    res = run_estimate(build_plan(cfg), "round-policies")
    rounds = res.rounds
    mean_round = statistics.fmean(r.round_time_s for r in rounds)
    sampled = sum(r.num_clients for r in rounds)
    late = [c for c in res.clients if c.late]
    return {"model": model, "policy": name, "round": keys, "rounds": len(rounds),
            "round_time_s": mean_round,
            "round_interval_s": [statistics.fmean(r.round_interval_s[0] for r in rounds),
                                 statistics.fmean(r.round_interval_s[1] for r in rounds)],
            "sampled_per_round": sampled / len(rounds), "used_per_round": sum(r.replies for r in rounds) / len(rounds),
            "late_share": len(late) / sampled,
            "late_by_profile": {p: sum(c.profile == p for c in late) for p in sorted({c.profile for c in late})},
            "wasted_up_bytes_per_round": sum(r.wasted_bytes_up for r in rounds) / len(rounds),
            "abandoned_rounds": sum(r.abandoned for r in rounds),
            "hours_per_1000_rounds": mean_round * 1000 / 3600}


def main() -> None:
    from fedbw.calibration.file import load_costs, model_stamp

    t0 = time.perf_counter()
    rows = [row(model, name, keys) for model, deadline in MODELS.items()
            for name, keys in policies(deadline).items()]
    for r in rows:
        base = next(b for b in rows if b["model"] == r["model"] and not b["round"])
        r["round_ratio"] = r["round_time_s"] / base["round_time_s"]
        print(f"{r['model']:10s} {r['policy']:34s} round {r['round_time_s']:6.2f} s "
              f"[{r['round_interval_s'][0]:.2f}–{r['round_interval_s'][1]:.2f}] ×{r['round_ratio']:.2f}  "
              f"used {r['used_per_round']:.1f}/{r['sampled_per_round']:.1f}  late {100 * r['late_share']:.0f} %  "
              f"wasted {r['wasted_up_bytes_per_round'] / 1e6:.1f} MB/round")
    data = {"benchmark": "round-policies", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "command": ".venv/bin/python benchmarks/round_policies.py", "population": MIX, "clients_total": 100,
            "per_round": 10, "rounds": ROUNDS, "engine": "estimate", "made_by": model_stamp(load_costs(None)),
            "rows": rows, "wall_s": time.perf_counter() - t0}
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
