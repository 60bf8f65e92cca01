"""Is emulate's reference inflated by its host? The same configs emulated at the validation's dilation and at
twice it, side by side in one run (issue 31: a target the reference cannot repeat is a finding, not a fit).

Why: emulate runs every device's processes on one 2-core host and dilates time so that each device has a
core of its own in emulated time ("auto" dilation). If that were enough, doubling the dilation would leave
the emulated rounds where they are: each device would only have more idle CPU. If the rounds shrink when
the dilation doubles, the host was still in the way at auto dilation, and validation 3's reference rounds
(emulated at auto dilation) are long by about that much. The parts of Flower's framework time say where.

Each row runs its trials per dilation (``ROWS``), in the order A B B A (auto, double, double, auto) so that a
drift of the host over the run falls on both sides; 3 rounds a trial, the steady rounds (≥ 2) pooled.
Rows are validation 3's configs (benchmarks/validate.py builds them); this script does not touch the
validation's run log, and nothing is fitted to what it finds.

Usage: .venv/bin/python benchmarks/dilation.py [--rows ROW,...] [--trials N]
Writes benchmarks/results/dilation.json; docs/fidelity.md's table comes from it (`fedbw docs`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedbw.errors import FedbwError  # noqa: E402

RESULT = ROOT / "benchmarks" / "results" / "dilation.json"
#: a plain and a SecAgg+ row of validation 3, both of 4 clients: the cheapest rows whose devices contend
#: (a 2-client row leaves the host half idle; an 8-client row takes an hour at double dilation), and the
#: trials per dilation each gets: the SecAgg+ row's trial takes about 6.5 min at auto dilation and 13 at double
ROWS = {"small-cnn-mobile-4g-4": 2, "mlp-mobile-5g-4-secagg": 1}
FACTOR = 2.0


def _validate() -> Any:
    """benchmarks/validate.py, whose rows, configs and run helpers this script uses."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import validate

    return validate


def order(trials: int) -> list[str]:
    """Which dilation each trial runs at: A B B A A B B A … (``trials`` of each)."""
    pattern = ["auto", "double", "double", "auto"]
    return [pattern[i % 4] for i in range(2 * trials)]


def trial(V: Any, cfg: dict[str, Any], dilation: float) -> dict[str, Any]:
    from fedbw.engines.app_start import host_reference_s

    entry: dict[str, Any] = {"dilation": dilation, "started_utc": V.now(), "host_reference_before_s": host_reference_s()}
    t0 = time.perf_counter()
    try:
        res = V.run_engine({**cfg, "emulate": {"dilation": dilation}}, "emulate")
    except FedbwError as exc:
        entry.update(status="failed", error=str(exc).splitlines()[0])
    else:
        entry.update(status="ok", run_dir=str(Path(res.run_dir).relative_to(ROOT)), rounds=V.rounds_of(res))
    entry.update(wall_s=time.perf_counter() - t0, finished_utc=V.now(), host_reference_after_s=host_reference_s())
    return entry


def summary(trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The steady rounds of a dilation's trials pooled: mean, each trial's mean, mean parts, CPU busy."""
    from fedbw.flower_protocol import FRAMEWORK_PARTS

    ok = [t for t in trials if t["status"] == "ok"]
    rounds = [r for t in ok for r in t["rounds"] if r["round"] >= 2]
    if not rounds:
        return None
    parts = {p: statistics.mean((r.get("parts") or {}).get(p, 0.0) for r in rounds) for p in FRAMEWORK_PARTS}
    busy = [r["host_cpu_busy"] for r in rounds if r.get("host_cpu_busy") is not None]
    return {"trials": len(ok), "steady_mean_s": statistics.mean(r["round_time_s"] for r in rounds),
            "trial_means_s": [statistics.mean(r["round_time_s"] for r in t["rounds"] if r["round"] >= 2) for t in ok],
            "comm_s": statistics.mean(r["comm_time_s"] for r in rounds),
            "framework_s": statistics.mean(r["framework_time_s"] for r in rounds),
            "parts_s": parts, "host_cpu_busy": statistics.mean(busy) if busy else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default=",".join(ROWS), help="validation rows (benchmarks/validate.py's ids)")
    ap.add_argument("--trials", type=int, default=None,
                    help="emulate trials per dilation and row (default: each row's own, ROWS)")
    args = ap.parse_args()
    V = _validate()
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in V.ROWS]
    if unknown:
        ap.error(f"unknown row(s) {', '.join(unknown)}; validation rows are {', '.join(V.ROWS)}")
    if args.trials is not None and args.trials < 1:
        ap.error("--trials must be at least 1")
    from fedbw.calibration.file import load_costs, model_stamp

    out: dict[str, Any] = {"benchmark": "dilation", "date": V.now(), "machine": V.machine(), "factor": FACTOR,
                           "rounds": V.ROUNDS, "commit": V.head_commit(), "made_by": model_stamp(load_costs(None)),
                           "rows": []}
    for rid in rows:
        cfg = V.row_config(*V.ROWS[rid])
        auto = V.dilation(cfg["clients"]["total"], None)
        runs = []
        for which in order(args.trials or ROWS.get(rid, 1)):
            k = auto if which == "auto" else FACTOR * auto
            print(f"{rid}: dilation {k:g} ({which})", flush=True)
            runs.append({"which": which, **trial(V, cfg, k)})
            print(f"  {runs[-1]['status']} in {runs[-1]['wall_s']:.0f} s", flush=True)
        est = V.run_engine(cfg, "estimate")
        model = [r for r in V.rounds_of(est) if r["round"] >= 2]
        out["rows"].append({
            "row": rid, "auto_dilation": auto, "trials": runs,
            "auto": summary([t for t in runs if t["which"] == "auto"]),
            "double": summary([t for t in runs if t["which"] == "double"]),
            "estimate_steady_mean_s": statistics.mean(r["round_time_s"] for r in model),
            "estimate_parts_s": V.steady_parts(model)})
        RESULT.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")  # each row as it ends
    from fedbw.report.validation_table import dilation_markdown

    print(dilation_markdown(out))


if __name__ == "__main__":
    main()
