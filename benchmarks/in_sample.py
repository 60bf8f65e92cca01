"""The current model on every row a validation has run, *in sample*: what a model change did to the rows that
led to it. Not a validation — these rows informed the change — but the check that it did what it was made
for, and what it did to the rows it was not made for.

For each validation's rows (benchmarks/results/validation.json) it times the row with the estimate engine
under this checkout's model and the calibration that validation froze (found among the repository's
calibration files by its fingerprint; a validation whose calibration is no longer in the repository is
left out, said in the result), and sets the steady rounds' mean beside emulate's measured mean and the
estimate the validation recorded under its own frozen model.

    git worktree add /tmp/previous <the commit before the model change>
    .venv/bin/python benchmarks/in_sample.py --previous-root /tmp/previous     # a few seconds

``--previous-root`` times the same rows under the same calibrations with the model of another checkout too
(the model before the change): the change's own effect, apart from the calibration each validation froze.

Writes benchmarks/results/in-sample.json; `fedbw docs` renders it in docs/fidelity.md.
"""

from __future__ import annotations

import functools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
OUT = ROOT / "benchmarks" / "results" / "in-sample.json"
VALIDATION = ROOT / "benchmarks" / "results" / "validation.json"
#: Why a validation frozen on the current model is not timed here: its rows are out of sample by construction.
HELD_OUT = "frozen on this model: held out, not in sample"


@functools.lru_cache(maxsize=1)
def calibration_files() -> tuple[dict[str, str], dict[str, str]]:
    """Every calibration in the repository that reads in its current form, by fingerprint and by the time its
    run was measured (the shipped one first: a tie keeps it)."""
    from fedbw.calibration.file import read_calibration
    from fedbw.errors import ConfigError

    by_fingerprint: dict[str, str] = {}
    by_created: dict[str, str] = {}
    for path in [ROOT / "fedbw" / "catalog" / "flower-costs.toml", *sorted((ROOT / "benchmarks" / "results").glob(
            "calibration-*.toml"))]:
        try:
            cal = read_calibration(path)
        except ConfigError:  # a file of an earlier form (e.g. the combine's first fit): not a candidate
            continue
        by_fingerprint.setdefault(cal.fingerprint, str(path.relative_to(ROOT)))
        by_created.setdefault(str(cal.provenance.get("created_utc")), str(path.relative_to(ROOT)))
    return by_fingerprint, by_created


def frozen_calibration(number: int, fingerprint: str | None) -> tuple[str | None, str]:
    """The file of validation ``number``'s calibration, and how it was found: by its fingerprint, else (an
    older calibration whose file has since been refitted or re-timed in the current form) by the time its
    run was measured, which the freeze in the run log recorded."""
    by_fingerprint, by_created = calibration_files()
    if fingerprint in by_fingerprint:
        return by_fingerprint[fingerprint], "the frozen calibration"
    log = ROOT / "benchmarks" / "results" / "validation-runs.jsonl"
    freezes = [e for line in log.read_text(encoding="utf-8").splitlines() if line.strip()
               for e in [json.loads(line)] if e.get("kind") == "freeze" and e.get("id") == number]
    created = freezes[0].get("calibration_created_utc") if freezes else None
    if created in by_created:
        return by_created[created], "the frozen calibration's run, in its current form (another fingerprint)"
    return None, "its calibration is not among the repository's calibration files"


def estimate_steady_mean(row: str, calibration: str) -> float:
    """The estimate engine's mean steady round (rounds ≥ 2) of a validation row under ``calibration``."""
    import validate as V

    from fedbw.config import config_from_dict
    from fedbw.engines.estimate import estimate_round
    from fedbw.plan import build_plan

    cfg = {**V.row_config(*V.ROWS[row]), "engine": "estimate", "output_dir": "/tmp/fedbw-in-sample",
           "deployment": {"calibration": str(ROOT / calibration)}}
    plan = build_plan(config_from_dict(cfg))
    clock = plan.deployment_clock()
    rounds = [estimate_round(plan, r, clock=clock).round_time_s for r in range(1, plan.rounds + 1)]
    steady = rounds[1:] or rounds
    return sum(steady) / len(steady)


def previous_estimates(root: Path) -> dict[str, Any]:
    """The same rows' estimates under the model of the checkout at ``root`` (this script run there, its
    ``fedbw`` first on the path): {"model_version", "rows": {validation: {row: seconds}}}."""
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, __file__, "--estimates-only"], env=env, capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise SystemExit(f"in_sample: the estimates under {root} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def estimates_only() -> dict[str, Any]:
    """Every validation row's estimate under this process's model (what --previous-root asks for)."""
    from fedbw.netmodel.version import model_version

    data = json.loads(VALIDATION.read_text(encoding="utf-8"))
    rows: dict[str, dict[str, float]] = {}
    for number, v in enumerate(data["validations"], 1):
        path, _ = frozen_calibration(number, (v.get("made_by") or {}).get("calibration"))
        if path is not None:
            rows[str(number)] = {r["row"]: estimate_steady_mean(r["row"], path) for r in v["rows"]}
    return {"model_version": model_version(), "rows": rows}


def diagnose(previous: dict[str, Any] | None = None) -> dict[str, Any]:
    from fedbw.netmodel.version import model_version

    data = json.loads(VALIDATION.read_text(encoding="utf-8"))
    validations, left_out = [], []
    for number, v in enumerate(data["validations"], 1):
        fingerprint = (v.get("made_by") or {}).get("calibration")
        if (v.get("made_by") or {}).get("model_version") == model_version():
            # frozen on this very model: held out, the validation of the change, not a row that led to it
            left_out.append({"validation": number, "calibration": fingerprint, "why": HELD_OUT})
            continue
        path, how = frozen_calibration(number, fingerprint)
        if path is None:
            left_out.append({"validation": number, "calibration": fingerprint, "why": how})
            continue
        rows = []
        for r in v["rows"]:
            now = estimate_steady_mean(r["row"], path)
            emulate = r["emulate_mean_s"]
            before = ((previous or {}).get("rows") or {}).get(str(number), {}).get(r["row"])
            rows.append({"row": r["row"], "emulate_mean_s": emulate, "frozen_estimate_s": r.get("estimate_steady_mean_s"),
                         "estimate_s": now, "error": now / emulate - 1,
                         "frozen_error": (r["estimate_steady_mean_s"] / emulate - 1
                                          if r.get("estimate_steady_mean_s") else None),
                         "previous_estimate_s": before,
                         "previous_error": None if before is None else before / emulate - 1})
        validations.append({"validation": number, "frozen_model": (v.get("made_by") or {}).get("model_version"),
                            "calibration": fingerprint, "calibration_file": path, "calibration_found": how,
                            "rows": rows})
    return {"benchmark": "in-sample", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "made_by": {"model_version": model_version(), "calibration": "per validation (its frozen one)"},
            "previous_model": None if previous is None else previous["model_version"],
            "validations": validations, "left_out": left_out}


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--previous-root", type=Path, help="a checkout whose model to time the same rows under too")
    ap.add_argument("--estimates-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.estimates_only:
        print(json.dumps(estimates_only()))
        return
    if args.previous_root is not None and not (args.previous_root / "fedbw").is_dir():
        ap.error(f"--previous-root {args.previous_root}: not a fedbw checkout (no fedbw/ package there)")
    data = diagnose(previous_estimates(args.previous_root.resolve()) if args.previous_root else None)
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    for v in data["validations"]:
        errors = [abs(r["error"]) for r in v["rows"]]
        frozen = [abs(r["frozen_error"]) for r in v["rows"] if r["frozen_error"] is not None]
        previous = [abs(r["previous_error"]) for r in v["rows"] if r["previous_error"] is not None]
        print(f"validation {v['validation']}: median |error| now {100 * statistics.median(errors):.1f} %"
              + (f", frozen model {100 * statistics.median(frozen):.1f} %" if frozen else "")
              + (f", previous model {100 * statistics.median(previous):.1f} %" if previous else ""))
        for r in v["rows"]:
            fe = "-" if r["frozen_error"] is None else f"{100 * r['frozen_error']:+.1f} %"
            print(f"  {r['row']:34s} emulate {r['emulate_mean_s']:7.2f} s  now {r['estimate_s']:7.2f} s "
                  f"({100 * r['error']:+.1f} %)  frozen {fe}")
    for x in data["left_out"]:
        print(f"validation {x['validation']} left out: {x['why']}")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
