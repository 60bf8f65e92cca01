"""One config through estimate, simulate and emulate: do the engines agree where they should?

Three checks (targets from issue 6):

1. Per transfer: every message payload that emulate moved through the shaper in ≥ 1 s, against the
   network model's time for the same bytes on the same link (``transfer_time_s``): target ±2 %.
   Transfers during which the sender (Flower) left the link idle are counted and shown apart.
2. Network part of each round: emulate's measured critical-path download + upload vs simulate's
   virtual clock (and estimate's prediction) on the same plan: target ±5 %.
3. Scale: N SuperNodes on this machine (default 16): set-up time, round time, memory, and Flower's
   per-message framework time.

Prints markdown tables (pasted into docs/fidelity.md) and writes benchmarks/results/agreement.json.
Usage: .venv/bin/python benchmarks/agreement.py [--rounds 2] [--scale-clients 16] [--skip-scale]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedbw.config import config_from_dict  # noqa: E402
from fedbw.netmodel import transfer_time_s  # noqa: E402
from fedbw.plan import build_plan  # noqa: E402
from fedbw.runner import run_experiment  # noqa: E402

#: A model whose uploads take seconds on home uplinks, so transfers dominate their round trips.
AGREEMENT_CONFIG: dict[str, Any] = {
    "name": "agreement", "seed": 0, "model": {"name": "resnet18"},
    "clients": {"total": 4, "per_round": 4, "compute": "synthetic"},
    "training": {"rounds": 2},
    "network": {"mix": [{"profile": "home-30", "share": 1}, {"profile": "home-50", "share": 1}]},
}
SCALE_CONFIG: dict[str, Any] = {
    "name": "scale", "seed": 0, "model": {"name": "small-cnn"},
    "clients": {"total": 16, "per_round": 16, "compute": "synthetic"},
    "training": {"rounds": 1}, "network": {"profile": "home-30"},
}


def run(cfg_dict: dict[str, Any], engine: str, out: Path) -> Any:
    cfg = config_from_dict({**cfg_dict, "engine": engine, "output_dir": str(out)})
    t0 = time.perf_counter()
    result = run_experiment(cfg)
    print(f"  {engine}: {len(result.rounds)} round(s) in {time.perf_counter() - t0:.1f} s → {result.run_dir}",
          flush=True)
    return result


def per_transfer(plan: Any, emulate_dir: Path) -> list[dict[str, Any]]:
    """Every payload of ≥ 1 s on the shaped links, against the network model for the same bytes."""
    summary = json.loads((emulate_dir / "emulate.json").read_text())
    rows = []
    for m in summary["messages"]:
        link = plan.clients[m["client_id"]].link
        for d, rate in (("down", link.down_payload_mbps), ("up", link.up_payload_mbps)):
            measured = m["bulk"][f"{d}_s"]
            if measured < 1.0:
                continue
            nbytes = m["bulk"][f"{d}_bytes"]
            predicted = transfer_time_s(nbytes, rate, link.one_way_s)
            rows.append({"round": m["round"], "client": m["client_id"], "stage": m["stage"], "dir": d,
                         "profile": plan.clients[m["client_id"]].profile, "bytes": nbytes, "rate_mbps": rate,
                         "measured_s": measured, "predicted_s": predicted, "error": measured / predicted - 1,
                         "sender_idle_s": m["bulk"][f"{d}_sender_idle_s"],
                         "message_s": m[f"t_{d}_s"]})
    return rows


def per_message_vs_simulate(emulate: Any, simulate: Any) -> list[dict[str, Any]]:
    """Whole message transfers (round trips, headers included) vs the virtual clock's time for them."""
    sim = {(c.round, c.client_id, s.stage): s for c in simulate.clients for s in c.stages}
    rows = []
    for c in emulate.clients:
        for s in c.stages:
            v = sim.get((c.round, c.client_id, s.stage))
            if v is None:
                continue
            rows.append({"round": c.round, "client": c.client_id, "stage": s.stage,
                         "emulate_down_s": s.t_down_s, "simulate_down_s": v.t_down_s,
                         "emulate_up_s": s.t_up_s, "simulate_up_s": v.t_up_s,
                         "wire_bytes_up": s.bytes_up, "flower_bytes_up": v.bytes_up})
    return rows


def rounds_table(est: Any, sim: Any, emu: Any) -> list[dict[str, Any]]:
    rows = []
    for e, s, m in zip(est.rounds, sim.rounds, emu.rounds):
        rows.append({"round": m.round, "estimate_comm_s": e.comm_time_s, "simulate_comm_s": s.comm_time_s,
                     "emulate_comm_s": m.comm_time_s, "error_vs_simulate": m.comm_time_s / s.comm_time_s - 1,
                     "simulate_round_s": s.round_time_s, "emulate_round_s": m.round_time_s,
                     "emulate_framework_s": m.framework_time_s,
                     "framework_parts_s": m.extra.get("framework_parts_s", {})})
    return rows


def scale(out: Path, n: int) -> dict[str, Any]:
    cfg = {**SCALE_CONFIG, "clients": {**SCALE_CONFIG["clients"], "total": n, "per_round": n}}
    res = run(cfg, "emulate", out)
    summary = json.loads((Path(res.run_dir) / "emulate.json").read_text())
    msgs = [m for m in summary["messages"] if m["error"] is None]
    starts = sorted(m["parts"]["clientapp_start_s"] for m in msgs)
    rnd = res.rounds[0]
    return {"supernodes": n, "startup_s": summary["startup_s"], "run_wall_s": summary["run_wall_s"],
            "round_time_s": rnd.round_time_s, "comm_time_s": rnd.comm_time_s,
            "framework_time_s": rnd.framework_time_s, "peak_rss_bytes": summary["peak_rss_bytes"],
            "clientapp_start_median_s": statistics.median(starts) if starts else None,
            "clientapp_start_max_s": starts[-1] if starts else None,
            "framework_parts_s": rnd.extra.get("framework_parts_s", {})}


LINK_PROFILES = ("home-30", "mobile-4g")
FIXTURE_APP = ROOT / "tests" / "engines" / "fixtures" / "numpy_app"


def link_fidelity(num_params: int, rounds: int) -> list[dict[str, Any]]:
    """The shaper + network model alone: a one-array NumPy app (single large object per message, so no
    per-object round trips), one client per profile, light CPU load. Every payload ≥ 1 s vs the model."""
    from fedbw.engines.emulate import EmulatedClient, emulate_app
    from fedbw.engines.emulate.clients import clients_for_profile

    clients = [EmulatedClient(i, p, clients_for_profile(1, p, seed=i)[0].link) for i, p in enumerate(LINK_PROFILES)]
    t0 = time.perf_counter()
    res = emulate_app(FIXTURE_APP, clients, run_config={"min-clients": len(clients), "num-server-rounds": rounds,
                                                        "num-params": num_params})
    print(f"  link fidelity (NumPy app, {num_params:,} float32): {time.perf_counter() - t0:.1f} s", flush=True)
    rows = []
    for m in res.messages:
        link = clients[m.client_id].link
        for d, tr, rate, lat_ms in (("down", m.down, link.down_mbps, link.latency_down_ms),
                                    ("up", m.up, link.up_mbps, link.latency_up_ms)):
            if tr.bulk_duration_s < 1.0:
                continue
            predicted = transfer_time_s(tr.bulk_bytes, rate, lat_ms / 1e3)
            rows.append({"round": int(m.span.group or 0), "client": m.client_id,
                         "profile": clients[m.client_id].profile,
                         "stage": "fit", "dir": d, "bytes": tr.bulk_bytes, "rate_mbps": rate,
                         "measured_s": tr.bulk_duration_s, "predicted_s": predicted,
                         "error": tr.bulk_duration_s / predicted - 1, "sender_idle_s": tr.sender_idle_s,
                         "message_s": tr.duration_s})
    return rows


def summarize(transfers: list[dict[str, Any]]) -> dict[str, Any]:
    """Raw errors, and errors of the link-limited time (measured minus time the sender left the link idle)."""
    for t in transfers:
        t["link_limited_s"] = t["measured_s"] - t["sender_idle_s"]
        t["link_limited_error"] = t["link_limited_s"] / t["predicted_s"] - 1
    raw = [abs(t["error"]) for t in transfers]
    lim = [abs(t["link_limited_error"]) for t in transfers]
    return {"transfers_ge_1s": len(transfers),
            "with_sender_idle_over_50ms": sum(t["sender_idle_s"] >= 0.05 for t in transfers),
            "raw_within_2pct": sum(e <= 0.02 for e in raw),
            "raw_median_abs_error": statistics.median(raw) if raw else None,
            "raw_max_abs_error": max(raw, default=None),
            "link_limited_within_2pct": sum(e <= 0.02 for e in lim),
            "link_limited_median_abs_error": statistics.median(lim) if lim else None,
            "link_limited_max_abs_error": max(lim, default=None)}


TRANSFER_COLS = [("round", "round", "d"), ("client", "client", "d"), ("profile", "profile", "s"),
                 ("stage", "stage", "s"), ("dir", "dir", "s"), ("bytes", "payload B", ",.0f"),
                 ("predicted_s", "model s", ".3f"), ("measured_s", "emulate s", ".3f"), ("error", "error", "+.2%"),
                 ("sender_idle_s", "sender idle s", ".3f"), ("link_limited_error", "error w/o sender idle", "+.2%"),
                 ("message_s", "whole message s", ".3f")]


def md_table(rows: list[dict[str, Any]], cols: list[tuple[str, str, str]]) -> str:
    head = "| " + " | ".join(c[1] for c in cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = "".join("| " + " | ".join(format(r[c[0]], c[2]) if r[c[0]] is not None else "-" for c in cols) + " |\n"
                   for r in rows)
    return head + body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scale-clients", type=int, default=16)
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "agreement.json")
    ap.add_argument("--clients", type=int, default=4, help="clients (all sampled) in the engine comparison")
    ap.add_argument("--model", default="resnet18", help="catalog model of the engine comparison")
    ap.add_argument("--skip-engines", action="store_true")
    ap.add_argument("--skip-link", action="store_true")
    ap.add_argument("--link-params", type=int, default=4_000_000, help="float32 parameters of the link check's app")
    args = ap.parse_args()
    cfg = {**AGREEMENT_CONFIG, "training": {"rounds": args.rounds}, "model": {"name": args.model},
           "clients": {**AGREEMENT_CONFIG["clients"], "total": args.clients, "per_round": args.clients}}
    plan = build_plan(config_from_dict(cfg))
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "machine": f"{platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores, "
                                         f"Python {platform.python_version()}",
                              "config": cfg}
    with tempfile.TemporaryDirectory(prefix="fedbw-agreement-") as tmp:
        out = Path(tmp)
        if not args.skip_link:
            report["link_transfers"] = link_fidelity(args.link_params, args.rounds)
            report["link_summary"] = summarize(report["link_transfers"])
        if not args.skip_engines:
            print("agreement config: " + json.dumps(cfg), flush=True)
            est = run(cfg, "estimate", out)
            sim = run(cfg, "simulate", out)
            emu = run(cfg, "emulate", out)
            report["transfers"] = per_transfer(plan, Path(emu.run_dir))
            report["transfer_summary"] = summarize(report["transfers"])
            report["messages"] = per_message_vs_simulate(emu, sim)
            report["rounds"] = rounds_table(est, sim, emu)
        if not args.skip_scale:
            report["scale"] = scale(out, args.scale_clients)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")

    if "link_transfers" in report:
        print("\n## Link fidelity (one-array app, payload ≥ 1 s): emulate measured vs network model\n")
        print(md_table(report["link_transfers"], TRANSFER_COLS))
        print(json.dumps(report["link_summary"]))
    if "transfers" in report:
        print("\n## fedbw apps (payload ≥ 1 s): emulate measured vs network model\n")
        print(md_table(report["transfers"], TRANSFER_COLS))
        print(json.dumps(report["transfer_summary"]))
        print("\n## Network part of each round (critical path): estimate / simulate / emulate\n")
        print(md_table(report["rounds"], [("round", "round", "d"), ("estimate_comm_s", "estimate s", ".2f"),
                                          ("simulate_comm_s", "simulate s", ".2f"),
                                          ("emulate_comm_s", "emulate s", ".2f"),
                                          ("error_vs_simulate", "emulate vs simulate", "+.1%"),
                                          ("simulate_round_s", "simulate round s", ".2f"),
                                          ("emulate_round_s", "emulate round s", ".2f"),
                                          ("emulate_framework_s", "emulate framework s", ".2f")]))
        for r in report["rounds"]:
            print(f"round {r['round']} framework parts (critical client, summed over stages): "
                  + ", ".join(f"{k} {v:.2f}" for k, v in r["framework_parts_s"].items()))
    if "scale" in report:
        s = report["scale"]
        print(f"\n## Scale: {s['supernodes']} SuperNodes\n")
        print(json.dumps(s, indent=1))
    print(f"\nwrote {args.out}")

if __name__ == "__main__":
    main()
