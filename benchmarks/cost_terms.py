"""Which of the model's constants earn their place: bootstrap intervals and k-fold cross-validated ablation
on a calibration's measured messages (fedbw/calibrate/evaluate.py).

Usage: .venv/bin/python benchmarks/cost_terms.py --messages benchmarks/results/calibration-backoff.messages.jsonl
           [--folds 5] [--resamples 200] [--out benchmarks/results/cost-terms.json]

The messages come from `fedbw calibrate --out FILE` (written beside FILE). Pure arithmetic: about a minute
on 2 cores, no Flower process. Prints the table docs/methodology.md shows and writes the JSON (atomically).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fedbw.calibrate.evaluate import as_json, evaluate  # noqa: E402
from fedbw.calibrate.measure import read_measurements  # noqa: E402
from fedbw.errors import FedbwError  # noqa: E402
from fedbw.calibration.file import model_stamp  # noqa: E402
from fedbw.files.atomic import write_json_atomic  # noqa: E402
from fedbw.report.cost_terms_table import cost_terms_markdown  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "cost-terms.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=Path, required=True, help="a calibration's NAME.messages.jsonl")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.folds < 2 or args.resamples < 10:
        ap.error("--folds must be at least 2 and --resamples at least 10")
    try:
        m = read_measurements(args.messages)
    except FedbwError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    verdicts, families = evaluate(m.messages, m.aggregation, args.folds, args.resamples, args.seed)
    try:
        where = str(args.messages.resolve().relative_to(ROOT))
    except ValueError:
        where = str(args.messages)
    data = as_json(verdicts, families, messages=where, message_count=len(m.messages),
                   messages_sha256=hashlib.sha256(args.messages.read_bytes()).hexdigest(),
                   measured_utc=m.provenance.get("created_utc", "?"), machine=m.provenance.get("machine", "?"),
                   folds=args.folds, resamples=args.resamples, seed=args.seed,
                   date=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                   evaluated_on=f"{platform.platform()}, Python {platform.python_version()}",
                   # the terms' expressions are the model's: the verdicts belong to this model version
                   made_by={**model_stamp(None), "calibration": "fitted from the messages above"})
    print(cost_terms_markdown(data))
    write_json_atomic(args.out, data)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
