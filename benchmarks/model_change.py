"""Did the model change under a frozen validation? Every validation grid's rows, as the estimate engine
times them under the frozen model (a checkout of the freeze's commit) and under this checkout's model.

Why: a validation is of the model it froze; when the model moves on for work the grids do not use (round
policies, link-rate traces), docs/fidelity.md may say the validation still speaks for the current model
only if the grids' rounds did not move. This script measures that instead of asserting it.

    git worktree add /tmp/frozen <the freeze's commit>
    .venv/bin/python benchmarks/model_change.py --frozen-root /tmp/frozen

Writes benchmarks/results/model-change.json: both models' versions, each row's rounds under each, the
largest relative difference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "model-change.json"

#: Run under either checkout (its PYTHONPATH): every grid row's estimate rounds, and the model's version.
PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1] + "/benchmarks")
import validate as V
from fedbw.config import config_from_dict
from fedbw.engines.estimate import estimate_round
from fedbw.netmodel.version import model_version
from fedbw.plan import build_plan
rows = {}
# the validated grids: 1 to 3 (a checkout from before validation 4 calls validation 3's grid GRID)
for grid in (V.GRID_1, getattr(V, "GRID_2", []), getattr(V, "GRID_3", None) or V.GRID):
    for g in grid:
        cfg = config_from_dict({**V.row_config(*g), "engine": "estimate", "output_dir": "/tmp/fedbw-model-change"})
        plan = build_plan(cfg)
        clock = plan.deployment_clock()
        rows[V.row_id(*g)] = [estimate_round(plan, r, clock=clock).round_time_s for r in range(1, plan.rounds + 1)]
print(json.dumps({"model_version": model_version(), "rows": rows}))
"""


def rounds_under(root: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", PROBE, str(root)], env=env, capture_output=True, text=True,
                         cwd=root, check=False)
    if out.returncode != 0:
        raise SystemExit(f"model_change: the probe failed under {root}:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frozen-root", type=Path, required=True, help="a checkout of the freeze's commit")
    args = ap.parse_args()
    frozen, current = rounds_under(args.frozen_root.resolve()), rounds_under(ROOT)
    common = sorted(set(frozen["rows"]) & set(current["rows"]))
    diffs = {k: max(abs(b - a) / a for a, b in zip(frozen["rows"][k], current["rows"][k])) for k in common}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=args.frozen_root, capture_output=True,
                            text=True).stdout.strip()
    data = {"benchmark": "model-change", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "frozen_model": frozen["model_version"], "frozen_commit": commit,
            "current_model": current["model_version"], "rows": {k: {"frozen": frozen["rows"][k],
                                                                    "current": current["rows"][k]} for k in common},
            "max_rel_diff": max(diffs.values(), default=0.0), "rows_differing": sorted(k for k, d in diffs.items() if d)}
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{len(common)} rows; largest relative difference {data['max_rel_diff']:.3g} "
          f"({frozen['model_version']} → {current['model_version']}); wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
