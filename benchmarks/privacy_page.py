"""docs/privacy-overhead.md from scratch, in one command: its three studies, the SecAgg+ check, then the page.

    .venv/bin/python benchmarks/privacy_page.py [--skip NAME ...]

Runs, one after another (about 25 minutes on 2 cores):

* privacy-overhead — ``fedbw study experiments/privacy-overhead.toml`` (simulate, 5 clients: bytes measured);
* privacy-at-scale — ``fedbw study experiments/privacy-at-scale.toml`` (estimate: cohort × model size);
* dp-cohorts       — ``fedbw study experiments/dp-cohorts.toml`` (simulate, real training: ε against accuracy);
* secagg-scale     — ``benchmarks/secagg_scale.py`` (SecAgg+'s model against real rounds);

each writing its JSON into benchmarks/results/, then ``fedbw docs``, which renders the page's tables and draws
its figures from those files. A step that fails stops the run with its exit status; the steps before it
have written their files.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FEDBW = [sys.executable, "-m", "fedbw.cli"]
STEPS: dict[str, list[str]] = {
    name: [*FEDBW, "study", f"experiments/{name}.toml", "--result", f"benchmarks/results/{name}.json"]
    for name in ("privacy-overhead", "privacy-at-scale", "dp-cohorts")}
STEPS["secagg-scale"] = [sys.executable, "benchmarks/secagg_scale.py"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip", nargs="*", default=[], choices=sorted(STEPS), help="steps to leave out")
    args = ap.parse_args()
    env = {**os.environ, "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
           "RAY_USAGE_STATS_ENABLED": "0"}
    for name, cmd in STEPS.items():
        if name in args.skip:
            continue
        print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
        rc = subprocess.run(cmd, cwd=ROOT, env=env).returncode
        if rc:
            sys.exit(f"{name} failed (exit {rc}); the steps before it wrote their files")
    sys.exit(subprocess.run([*FEDBW, "docs"], cwd=ROOT, env=env).returncode)


if __name__ == "__main__":
    main()
