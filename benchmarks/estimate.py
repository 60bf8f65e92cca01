"""How fast the analytic engine answers: a 100-point sweep and a full `fedbw estimate` report.

Prints a table and writes benchmarks/results/estimate.json. Medians of repeated runs in one process.
Usage: .venv/bin/python benchmarks/estimate.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fedbw.compare import estimate_report, run_sweep

ROOT = Path(__file__).resolve().parents[1]


def timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "r50.toml"
        cfg.write_text('engine = "estimate"\n[model]\nname = "resnet50"\n[clients]\ntotal = 100\nper_round = 50\n')
        cases = {
            "sweep up_mbps, 100 points (50 clients/round)": lambda: run_sweep(cfg, "up_mbps",
                                                                             [1 + i for i in range(100)]),
            "sweep clients.per_round, 100 points": lambda: run_sweep(cfg, "clients.per_round",
                                                                    [1 + i for i in range(100)]),
            "estimate report: 3 profiles x 4 fabrics": lambda: estimate_report(None, model="resnet50"),
        }
        rows = []
        for name, fn in cases.items():
            fn()  # warm imports
            ts = timed(fn, args.repeats)
            rows.append({"case": name, "median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts),
                         "repeats": args.repeats})
        cli = [str(ROOT / ".venv/bin/fedbw"), "estimate", "--model", "resnet50", "--json"]
        ts = timed(lambda: subprocess.run(cli, check=True, capture_output=True), max(3, args.repeats // 2))
        rows.append({"case": "`fedbw estimate --json` process, start to exit", "median_s": statistics.median(ts),
                     "min_s": min(ts), "max_s": max(ts), "repeats": len(ts)})
    print(f"{'case':<48} {'median (ms)':>12} {'min (ms)':>10} {'max (ms)':>10}")
    for r in rows:
        print(f"{r['case']:<48} {r['median_s'] * 1e3:>12.1f} {r['min_s'] * 1e3:>10.1f} {r['max_s'] * 1e3:>10.1f}")
    out = ROOT / "benchmarks/results/estimate.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"python": sys.version.split()[0], "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
