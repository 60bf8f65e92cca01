"""What a round policy buys on a mixed population (issue 32.2), in the estimate engine: waiting for every
sampled client, a reporting deadline, over-selection (1.3×, FedScale's default), and both.

The population: 100 clients, 40 % on home-30, 30 % on home-80, 20 % on mobile-4g and 10 % on mobile-5g
(the catalog's profiles, docs/catalog.md), 10 clients per round, synthetic compute on the laptop-cpu profile,
Flower's deployment costs with the shipped calibration, 20 rounds. Two models: the small CNN (0.55 MB), whose
messages fit inside one of the ServerApp's 3 s polls, and ResNet-18 (46.8 MB), whose uploads take 10–60 s.

Per model and policy: the mean round with its mean 80 % interval, updates used of clients sampled per round,
the share of sampled clients that were late, their wasted uplink per round, and the hours 1,000 rounds take.
The deadline is set per model to about a home-30 client's exchange (the small CNN: 8 s, ResNet-18: 35 s).

``--engines`` adds the check across engines (issue 32.5): each of ``CASES`` (an over-selection config, plain
and with SecAgg+, a trace-driven one with a deadline, and one whose client goes off line mid-round, plain and
with SecAgg+; the small CNN with synthetic
compute, 3 rounds) run in estimate, simulate and emulate (undilated, real sockets through the shaper, which
replays the trace from the first round's start). Per case, engine and round: the clients it called late and
those that dropped, the round time, client 0's download. The
engines share the closing rule's idea and the trace, not their code: emulate's ServerApp stops pulling on its
own clock and the shaper moves the bytes; estimate and simulate lay both on the model.

Writes benchmarks/results/round-policies.json (made_by: the model's version and the calibration), which
docs/population.md's tables are generated from.

Usage: .venv/bin/python benchmarks/round_policies.py [--engines]
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


SLOW = [{"client": 0, "down_mbps": 0.5}, {"client": 1, "down_mbps": 0.5}]
#: The trace-driven case: client 0's downlink is home-80's for the first 6 s of the run, then 0.4 Mbps (the
#: small CNN's 0.55 MB then take about 11 s), so its download is fast in round 1 (over by about 3 s) and slow
#: from round 2 on (which starts after about 9 s): late for a 14 s deadline from round 2, on time in round 1.
STEP_TRACE = "t_s,up_mbps,down_mbps\n0,80,1000\n6,80,0.4\n60,80,0.4\n"
#: The availability case: clients 0 and 2 on line throughout, client 1 leaves 3 s into round 1 (before its fit
#: reply: a dropout, Flower's server waits for its heartbeat to lapse), client 3 is off line for the whole run.
LEAVER = "client,start_s,end_s\n0,0,10000\n1,0,3\n2,0,10000\n3,9000,10000\n"
#: The SecAgg+ availability case's: the same with client 3 on line throughout and client 4 never (rounds of
#: 4, then 3 clients: SecAgg+'s 3 shares need 3)
LEAVER_SECAGG = "client,start_s,end_s\n0,0,10000\n1,0,3\n2,0,10000\n3,0,10000\n4,9000,10000\n"
#: Each case of the check: what it shows, and the config keys beside the common ones.
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "over-selection": ("4 clients sampled for 2 per round (over_select = 2), clients 0 and 1 downloading at "
                       "0.5 Mbps, the rest on home-80",
                       {"clients": {"total": 4, "per_round": 2, "compute": "synthetic"},
                        "network": {"profile": "home-80", "overrides": SLOW}, "round": {"over_select": 2.0}}),
    "over-selection, SecAgg+": ("the same with SecAgg+ (the whole cohort's 4 shares, threshold 2): the late are "
                                "dropouts after the share exchange, whose masks the unmask stage reconstructs",
                                {"clients": {"total": 4, "per_round": 2, "compute": "synthetic"},
                                 "network": {"profile": "home-80", "overrides": SLOW}, "round": {"over_select": 2.0},
                                 "privacy": {"secagg": {"enabled": True, "num_shares": "all",
                                                        "reconstruction_threshold": 2}}}),
    "trace + deadline": ("4 clients on home-80, a 14 s deadline; client 0's downlink a trace that falls from "
                         "1 Gbps to 0.4 Mbps 6 s into the run (round 1 on time, later rounds late)",
                         {"clients": {"total": 4, "per_round": 4, "compute": "synthetic"},
                          "network": {"profile": "home-80", "trace_phase": "aligned",
                                      "overrides": [{"client": 0, "trace": "{trace}"}]},
                          "round": {"deadline_s": 14.0}}),
    "client off line mid-round": ("4 clients on home-80, 3 per round from those on line (clients.availability): "
                                  "client 1 leaves 3 s into round 1, client 3 is never on line",
                                  {"clients": {"total": 4, "per_round": 3, "compute": "synthetic",
                                               "availability": {"file": "{availability}"}},
                                   "network": {"profile": "home-80"}}),
    "client off line mid-round, SecAgg+": ("the same with SecAgg+ (3 shares, threshold 2) and 4 of 5 clients per "
                                           "round: client 1 leaves 3 s into round 1, before its masked vector; "
                                           "the unmasking reconstructs its share (issue 34's dropout check)",
                                           {"clients": {"total": 5, "per_round": 4, "compute": "synthetic",
                                                        "availability": {"file": "{availability_secagg}"}},
                                            "network": {"profile": "home-80"},
                                            "privacy": {"secagg": {"enabled": True, "num_shares": 3,
                                                                   "reconstruction_threshold": 2}}}),
}


def engines_check() -> list[dict[str, Any]]:
    """Each case's config in every engine: who was late in each round, the round's time, and the slowest
    download (the trace case's)."""
    import tempfile

    from fedbw.config import config_from_dict
    from fedbw.runner import run_experiment

    out = []
    with tempfile.TemporaryDirectory(prefix="fedbw-round-policies-") as tmp:
        trace = Path(tmp) / "step.csv"
        trace.write_text(STEP_TRACE, encoding="utf-8")
        files = {"{trace}": trace}
        for key, text in (("{availability}", LEAVER), ("{availability_secagg}", LEAVER_SECAGG)):
            files[key] = Path(tmp) / f"{key.strip('{}')}.csv"
            files[key].write_text(text, encoding="utf-8")
        for case, (_, keys) in CASES.items():
            text = json.dumps(keys)
            for key, path in files.items():
                text = text.replace(key, str(path))
            keys = json.loads(text)
            for engine in ("estimate", "simulate", "emulate"):
                cfg = config_from_dict({"name": f"policy-{engine}", "engine": engine, "seed": 0, "output_dir": tmp,
                                        "model": {"name": "small-cnn"}, "training": {"rounds": 3}, **keys})
                res = run_experiment(cfg)
                for r in res.rounds:
                    mine = [c for c in res.clients if c.round == r.round]
                    out.append({"case": case, "engine": engine, "round": r.round, "round_time_s": r.round_time_s,
                                "round_interval_s": r.round_interval_s, "sampled": r.num_clients,
                                "late": sorted(c.client_id for c in mine if c.late),
                                "dropped": sorted(c.client_id for c in mine if c.dropped),
                                # a late client under emulate has no stage records (its reply never came in)
                                "client0_down_s": next((c.t_down_s for c in mine if c.client_id == 0
                                                        and not (c.late and not c.stages)), None)})
    return out


def main() -> None:
    import argparse

    from fedbw.calibration.file import load_costs, model_stamp

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", action="store_true", help="also run the check across engines (about 4 min)")
    args = ap.parse_args()
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
            "rows": rows}
    if args.engines:
        data["engines"] = {"date": data["date"], "made_by": data["made_by"], "rows": engines_check(),
                           "cases": {name: what for name, (what, _) in CASES.items()}}
        for e in data["engines"]["rows"]:
            print(f"{e['case']:17s} {e['engine']:9s} round {e['round']}: {e['round_time_s']:6.2f} s, late {e['late']}, "
                  f"dropped {e['dropped']}, "
                  "client 0's download " + ("-" if e["client0_down_s"] is None else f"{e['client0_down_s']:.2f} s"))
    elif OUT.is_file():  # keep the last check across engines (it is stamped with its own date)
        data["engines"] = json.loads(OUT.read_text(encoding="utf-8")).get("engines")
    data["wall_s"] = time.perf_counter() - t0
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
