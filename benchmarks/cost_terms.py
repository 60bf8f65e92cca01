"""Which of the model's constants earn their place: bootstrap intervals and k-fold cross-validated ablation
on a calibration's measured messages (fedbw/calibrate/evaluate.py).

Usage: .venv/bin/python benchmarks/cost_terms.py --messages benchmarks/results/calibration-backoff.messages.jsonl
           [--folds 5] [--resamples 200] [--out benchmarks/results/cost-terms.json]
       .venv/bin/python benchmarks/cost_terms.py --across [--out benchmarks/results/cost-terms-across.json]

The messages come from `fedbw calibrate --out FILE` (written beside FILE). Pure arithmetic: seconds per
messages file, no Flower process. Prints the table docs/methodology.md shows and writes the JSON (atomically).
``--across`` evaluates every committed calibration's messages (``benchmarks/results/*.messages.jsonl``) the
same way, one column each: whether a constant earns its place on one calibration is one sample; whether it
does on every host and dilation says if it is Flower's cost or the calibrating host's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fedbw.calibrate.evaluate import as_json, evaluate, hop_by_direction  # noqa: E402
from fedbw.calibrate.measure import read_measurements  # noqa: E402
from fedbw.errors import FedbwError  # noqa: E402
from fedbw.calibration.file import cpu_name, model_stamp  # noqa: E402
from fedbw.files.atomic import write_json_atomic  # noqa: E402
from fedbw.report.cost_terms_table import cost_terms_across_markdown, cost_terms_markdown  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
OUT = RESULTS / "cost-terms.json"
ACROSS_OUT = RESULTS / "cost-terms-across.json"


def _where(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _cpu(m: Any) -> str:
    """The calibrating host's CPU, by the calibration file's own rule (:func:`cpu_name`); "?" if unknown."""
    machine = m.secagg.get("machine") if isinstance(m.secagg, dict) else None
    return cpu_name(m.provenance, machine) or "?"


def _evaluated() -> dict[str, Any]:
    """When, where and under which model the verdicts were computed (the terms' expressions are the model's)."""
    return {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "evaluated_on": f"{platform.platform()}, Python {platform.python_version()}"}


def evaluate_file(path: Path, folds: int, resamples: int, seed: int) -> dict[str, Any]:
    """One messages file's verdicts as the JSON ``cost-terms.json`` holds (without the date and model stamp)."""
    m = read_measurements(path)
    verdicts, families = evaluate(m.messages, m.aggregation, folds, resamples, seed)
    return as_json(verdicts, families, messages=_where(path), message_count=len(m.messages),
                   messages_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                   measured_utc=m.provenance.get("created_utc", "?"), machine=m.provenance.get("machine", "?"),
                   cpu=_cpu(m), dilation=m.dilation, folds=folds, resamples=resamples, seed=seed,
                   hop_by_direction=hop_by_direction(m.messages, m.aggregation))


def across(folds: int, resamples: int, seed: int) -> dict[str, Any]:
    """Every committed calibration's messages, oldest measurement first."""
    files = sorted(RESULTS.glob("*.messages.jsonl"))
    if not files:
        raise FedbwError(f"no calibration messages (*.messages.jsonl) in {_where(RESULTS)}")
    cals = sorted((evaluate_file(f, folds, resamples, seed) for f in files), key=lambda c: c["measured_utc"])
    return {"benchmark": "cost-terms-across", "folds": folds, "resamples": resamples, "seed": seed, **_evaluated(),
            "made_by": {**model_stamp(None), "calibration": "fitted from each messages file"},
            "calibrations": cals}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=Path, default=None, help="a calibration's NAME.messages.jsonl")
    ap.add_argument("--across", action="store_true",
                    help="every committed calibration's messages, one column each (cost-terms-across.json)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="default: cost-terms.json, with --across "
                                                            "cost-terms-across.json (benchmarks/results/)")
    args = ap.parse_args(argv)
    if args.folds < 2 or args.resamples < 10:
        ap.error("--folds must be at least 2 and --resamples at least 10")
    if (args.messages is None) == (not args.across):
        ap.error("give either --messages FILE or --across")
    try:
        if args.across:
            data = across(args.folds, args.resamples, args.seed)
            out, table = args.out or ACROSS_OUT, cost_terms_across_markdown(data)
        else:
            data = evaluate_file(args.messages, args.folds, args.resamples, args.seed)
            # the terms' expressions are the model's: the verdicts belong to this model version
            data.update(_evaluated(), made_by={**model_stamp(None), "calibration": "fitted from the messages above"})
            out, table = args.out or OUT, cost_terms_markdown(data)
    except FedbwError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(table)
    write_json_atomic(out, data)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
