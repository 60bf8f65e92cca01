"""The shipped link-rate traces (issue 32.3): measure their statistics from a copy of mahimahi's traces,
then draw the CSVs that ship.

    .venv/bin/python benchmarks/traces.py --mahimahi DIR   # measure the shapes from DIR/*.up, *.down, then draw
    .venv/bin/python benchmarks/traces.py                  # draw the CSVs again from fedbw/catalog/traces.toml

mahimahi's traces (github.com/ravinet/mahimahi, traces/; GPL-3) never enter the repo: only the numbers
measured from them (mean, spread and lag-1 persistence of the log rate, outage share and length, per
direction, over 1 s steps) go into ``fedbw/catalog/traces.toml``, with the file they came from and the
command. The CSVs in ``fedbw/catalog/traces/`` are draws from those numbers (a seed each); the table it
prints sets each source's mean and percentiles beside its stand-in's. It writes
``benchmarks/results/traces.json`` for docs/catalog.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedbw.catalog.traces import SHAPES_FILE, TRACE_DIR, shipped_traces  # noqa: E402
from fedbw.traces import load_trace  # noqa: E402
from fedbw.traces.csv_trace import csv_text  # noqa: E402
from fedbw.traces.synthetic import DEFAULT_STEP_S, RateShape, fit_shape  # noqa: E402

RESULT = ROOT / "benchmarks" / "results" / "traces.json"
#: What ships: name → (mahimahi file stem, what a reader should picture). One seed and 600 s each.
SOURCES: dict[str, tuple[str, str]] = {
    "lte-short": ("Verizon-LTE-short", "an LTE phone, about 6 Mbps up and 5 down, moving by 2–4× within seconds"),
    "lte-fast": ("TMobile-LTE-short", "a faster LTE phone, about 13 Mbps up and 17 down"),
    "lte-driving": ("ATT-LTE-driving", "LTE in a moving car: about 0.8 Mbps up with one second in nine out"),
    "umts-driving": ("TMobile-UMTS-driving", "3G (UMTS) in a moving car: about 0.9 Mbps up, 2 down"),
}
DURATION_S, SEED = 600.0, 0
SOURCE_URL = "mahimahi's traces/ (github.com/ravinet/mahimahi; Winstein et al., NSDI 2013, recorded with Saturator)"


def _toml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _shape_toml(shape: RateShape) -> str:
    return "{ " + ", ".join(f"{k} = {v!r}" for k, v in shape.to_dict().items()) + " }"


def measure(mahimahi: Path) -> str:
    """traces.toml's text: each shipped trace's shapes measured from ``mahimahi``'s files."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    command = f"benchmarks/traces.py --mahimahi {mahimahi.name}/"
    out = ["# Shipped link-rate traces: the statistics of measured traces that cannot ship (GPL-3), from which",
           "# fedbw/catalog/traces/NAME.csv is drawn (fedbw/traces/synthetic.py). Written by benchmarks/traces.py.", ""]
    for name, (stem, description) in SOURCES.items():
        trace = load_trace(mahimahi / f"{stem}.up", mahimahi / f"{stem}.down")
        out += [f"[trace.{name}]", f"description = {_toml_str(description)}",
                f"source = {_toml_str(f'{stem}.up/.down from {SOURCE_URL}')}",
                'licence_of_source = "GPL-3.0 (not shipped: only these numbers, measured from it)"',
                f"measured_by = {_toml_str(command)}", f'measured_utc = "{stamp}"',
                f"duration_s = {DURATION_S!r}", f"seed = {SEED}",
                f"up = {_shape_toml(fit_shape(trace.up, DEFAULT_STEP_S))}",
                f"down = {_shape_toml(fit_shape(trace.down, DEFAULT_STEP_S))}",
                *(f"source_{d} = " + "{ " + ", ".join(f"{k} = {v!r}" for k, v in st.items()) + " }"
                  for d, st in _stats(trace).items()), ""]
    return "\n".join(out)


def _stats(trace: Any) -> dict[str, dict[str, float]]:
    return {d: {"mean_mbps": s.mean(), "p10_mbps": s.percentile(10), "p50_mbps": s.percentile(50),
                "p90_mbps": s.percentile(90), "duration_s": s.duration_s}
            for d, s in (("up", trace.up), ("down", trace.down))}


def draw_all() -> dict[str, Any]:
    """Write every shipped trace's CSV from traces.toml; the result's rows (source beside stand-in)."""
    import tomllib

    doc = tomllib.loads(SHAPES_FILE.read_text(encoding="utf-8"))
    TRACE_DIR.mkdir(exist_ok=True)
    rows = []
    for name, shipped in shipped_traces().items():
        trace = shipped.draw()
        shipped.path.write_text(csv_text(trace, shipped.up.step_s, f"{name}: {shipped.description}.\n"
                                          f"Synthetic (seed {shipped.seed}), with the statistics of {shipped.source};\n"
                                          "see fedbw/catalog/traces.toml and docs/traces.md."), encoding="utf-8")
        rows.append({"name": name, "description": shipped.description, "source": shipped.source,
                     "source_stats": {d: doc["trace"][name][f"source_{d}"] for d in ("up", "down")},
                     "stats": _stats(trace),
                     "shape": {"up": shipped.up.to_dict(), "down": shipped.down.to_dict()},
                     "measured_utc": shipped.measured_utc})
    return {"benchmark": "traces", "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": f"{platform.machine()}, Python {platform.python_version()}", "traces": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mahimahi", type=Path, help="a directory holding mahimahi's trace files (*.up, *.down)")
    args = parser.parse_args()
    if args.mahimahi is not None:
        SHAPES_FILE.write_text(measure(args.mahimahi), encoding="utf-8")
        shipped_traces.cache_clear()
        print(f"wrote {SHAPES_FILE.relative_to(ROOT)}")
    result = draw_all()
    RESULT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"{'trace':14} {'dir':5} {'source mean/p10/p90 Mbps':>28} {'stand-in mean/p10/p90':>26}")
    for row in result["traces"]:
        for d in ("up", "down"):
            a, b = row["source_stats"][d], row["stats"][d]
            print(f"{row['name']:14} {d:5} {a['mean_mbps']:9.2f} {a['p10_mbps']:8.2f} {a['p90_mbps']:8.2f} "
                  f"{b['mean_mbps']:9.2f} {b['p10_mbps']:8.2f} {b['p90_mbps']:8.2f}")
    print(f"wrote {len(result['traces'])} CSVs in {TRACE_DIR.relative_to(ROOT)}/ and {RESULT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
