"""emulate's host verdict (the requests' flight, the device's and the server's own CPU split out) on
validation 5's rows every round of which was host-bound before the splits.

Why: in validation 5 (docs/fidelity.md) every round of every ``params=1M``/``params=3M`` row was host-bound
(the link idle mid-payload, shares of 0.16–0.34 of the round) while the host's CPUs were 11–32 % busy. Those
messages hold about 600 Flower objects each, fetched two requests at a time, and a one-core device spends
CPU on each: its link idles between requests as a real device's of that speed would. emulate now splits
each payload's idle time, less the time its next request was in flight the other way, by the client
device's CPU use over it as a share of its cgroup cap, and what that leaves by the server's
(fedbw/engines/emulate/host.py). This runs one of validation 5's rows again (``--row``: ``1M-home-80-2``,
which the rule was written from, or ``3M-home-30-2``, ``1M-mobile-5g-4`` or ``1M-home-50-8-secagg``, which it
was not):

* at dilation 7, as validation 5 ran it: the deployment's own time should leave the host's share, and
* at dilation 1.25, a control where the host is overloaded (each device capped at 0.8 of a core, the
  server at 1.6 cores, on 2 cores beside the shaper): starved devices cannot reach their caps, so the
  verdict must still find the host.

Nothing here uses the model: every figure is emulate's own measurement. Beside the runs it puts validation
5's two trials of the row from the run log (their host share per round, before the split). Writes
benchmarks/results/host-verdict.json (or host-verdict-<row>.json for the others); docs/emulate.md's tables
are generated from them.

Usage: .venv/bin/python benchmarks/host_verdict.py [--dilations 7,1.25] [--row ROW] (ROW: a key of ROWS)
(1M-home-80-2: about 10 minutes at 7, 2 at 1.25; 3M-home-30-2: about 14 at 7, 4 at 1.25; 1M-mobile-5g-4: about
18 at 7, 4 at 1.25; 1M-home-50-8-secagg: about 17 at 7)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
for _k, _v in (("FLWR_TELEMETRY_ENABLED", "0"), ("FLWR_DISABLE_UPDATE_CHECK", "1"), ("RAY_USAGE_STATS_ENABLED", "0")):
    os.environ.setdefault(_k, _v)

RESULTS = ROOT / "benchmarks" / "results"
RUNS = ROOT / "runs" / "host-verdict"
#: Validation 5's rows the verdict is checked on: the one it was first changed for (host-verdict.json), and
#: three it was not written from: 3M values on home-30 (host-verdict-3M-home-30-2.json), 1M on mobile-5g with
#: four clients (host-verdict-1M-mobile-5g-4.json) and 1M with eight under SecAgg+, the host's busiest
#: (host-verdict-1M-home-50-8-secagg.json), each host-bound in every round of both trials.
ROWS = {"1M-home-80-2": (("1M", "home-80", 2, False), "host-verdict.json"),
        "3M-home-30-2": (("3M", "home-30", 2, False), "host-verdict-3M-home-30-2.json"),
        "1M-mobile-5g-4": (("1M", "mobile-5g", 4, False), "host-verdict-1M-mobile-5g-4.json"),
        "1M-home-50-8-secagg": (("1M", "home-50", 8, True), "host-verdict-1M-home-50-8-secagg.json")}
VALIDATION = 5


def _payloads(messages: list[Any]) -> list[dict[str, Any]]:
    """Each message's payloads: idle time, the device's CPU use over it, and the split."""
    out = []
    for m in messages:
        for d in ("down", "up"):
            out.append({"round": m.round, "client": m.client_id, "direction": d, "payload_s": m.bulk.get(f"{d}_s"),
                        "idle_s": m.bulk.get(f"{d}_sender_idle_s"),
                        "request_flight_s": m.bulk.get(f"{d}_request_flight_s"),
                        "device_busy": m.bulk.get(f"{d}_device_busy"),
                        "device_throttled": m.bulk.get(f"{d}_device_throttled"),
                        "server_busy": m.bulk.get(f"{d}_server_busy"),
                        "server_throttled": m.bulk.get(f"{d}_server_throttled")})
    return out


def run_once(row: tuple[str, str, int, bool], dilation: float) -> dict[str, Any]:
    import validate as V

    from fedbw.config import config_from_dict
    from fedbw.engines.emulate.run import read_messages_of_run
    from fedbw.runner import run_experiment

    cfg = V.row_config(*row)
    cfg.update(engine="emulate", output_dir=str(RUNS), name=f"{cfg['name']}-k{dilation:g}",
               emulate={"dilation": dilation})
    result = run_experiment(config_from_dict(cfg))
    rounds = [{"round": r.round, "round_time_s": r.round_time_s, "host_bound": r.host_bound,
               "host_share": r.host.share if r.host else None, "lost_s": r.host.lost_s if r.host else None,
               "device_bound_s": r.host.device_bound_s if r.host else None,
               "server_bound_s": r.host.server_bound_s if r.host else None,
               "cpu_busy": r.host.cpu_busy if r.host else None,
               "cpu_saturated": r.host.cpu_saturated if r.host else None} for r in result.rounds]
    return {"dilation": dilation, "run_dir": str(result.run_dir.relative_to(ROOT)), "rounds": rounds,
            "payloads": _payloads(read_messages_of_run(result.run_dir))}


def validation_trials(row: tuple[str, str, int, bool]) -> list[dict[str, Any]]:
    """Validation 5's trials of the row as its run log holds them (the verdict before the split)."""
    import validate as V

    rid = V.row_id(*row)
    return [{"trial": e["trial"], "dilation": e["dilation"], "commit": e["commit"][:10],
             "host_shares": [r["host_share"] for r in e["rounds"]],
             "host_bound": [r["host_bound"] for r in e["rounds"]],
             "cpu_busy": [r.get("host_cpu_busy") for r in e["rounds"]]}
            for e in V.read_log() if e["kind"] == "trial" and e.get("freeze") == VALIDATION and e["row"] == rid
            and e.get("status") == "ok"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dilations", default="7,1.25", help="comma-separated dilations to run the row at")
    ap.add_argument("--row", default="1M-home-80-2", choices=sorted(ROWS), help="validation 5's row to run")
    args = ap.parse_args(argv)
    row, out_name = ROWS[args.row]
    out = RESULTS / out_name
    try:
        dilations = [float(k) for k in args.dilations.split(",") if k.strip()]
    except ValueError:
        ap.error(f"--dilations takes numbers like 7,1.25, not {args.dilations!r}")
    if not dilations or any(k < 1 for k in dilations):
        ap.error("--dilations: each at least 1")
    from fedbw.collectives.machine import cpu_model
    from fedbw.errors import FedbwError
    from fedbw.files.atomic import write_json_atomic
    from fedbw.report.host_verdict_table import host_verdict_markdown

    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    runs = []
    for k in dilations:  # a run that fails is kept as its error, and the others still run
        try:
            runs.append(run_once(row, k))
        except FedbwError as exc:
            runs.append({"dilation": k, "error": str(exc).splitlines()[0], "rounds": [], "payloads": []})
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    data = {"benchmark": "host-verdict", "row": args.row, "validation": VALIDATION,
            "started_utc": started, "ended_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.platform()}, {os.cpu_count()} CPU(s)", "cpu": cpu_model(),
            "commit": commit[:10], "runs": runs, "validation_trials": validation_trials(row)}
    write_json_atomic(out, data, indent=1)
    print(host_verdict_markdown(data))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
