"""What SecAgg+ costs in CPU seconds on this machine: Flower's primitives timed, the stage model fitted,
and the model checked against real SecAgg+ rounds (loopback grid), with and without a dropout.

Prints two tables and writes benchmarks/results/secagg-costs.json (the fitted constants that
`fedbw.netmodel.secagg_cost` uses, every raw sample, the combine's candidate forms compared by
leave-one-size-out error on those samples, and the model-vs-measured rows); docs/privacy.md's
"What SecAgg+ costs in CPU time" is generated from it (`fedbw docs`).
Usage: .venv/bin/python benchmarks/secagg_costs.py [--repeats 5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np

from fedbw.fl.privacy.costs import machine_description, measure_secagg_round, measure_secagg_samples
from fedbw.netmodel.secagg_cost import (STAGES, client_round_s, typical_per_size, fit_constants, fit_linear_and_square,
                                        server_round_s)

ROOT = Path(__file__).resolve().parents[1]
#: (clients, shares, vector length, dropped after the share exchange)
ROUNDS = [(5, 3, 100_000, 0), (5, 3, 100_000, 1), (9, 5, 100_000, 0), (9, 5, 100_000, 1), (5, 3, 1_000_000, 0),
          (17, 9, 100_000, 0)]


def _typical_round(n: int, shares: int, length: int, dropped: int, repeats: int) -> tuple[dict, dict]:
    """Per stage, the median of ``repeats`` real rounds (the same estimator as the constants' fit)."""
    runs = [measure_secagg_round(n, shares, length, dropped=dropped) for _ in range(repeats)]
    client = {s: float(np.median([r.client_s.get(s, 0.0) for r in runs])) for s in STAGES}
    server = {s: float(np.median([r.server_s.get(s, 0.0) for r in runs])) for s in STAGES}
    return client, server


#: The combine's candidate forms: the model's (a·m + b·m², fitted by fedbw.netmodel.secagg_cost itself), the
#: form before 2026-12-06 (fixed + b·m²), and two others; columns of m, the number of shares combined.
FORMS = {"a·m + b·m² (the model's)": None, "c + b·m² (before 2026-12-06)": lambda m: [1.0, m * m],
         "c + a·m": lambda m: [1.0, m], "c + a·m + b·m²": lambda m: [1.0, m, m * m]}


def _predict(form: str, train: list[tuple[int, float]], m: int) -> float:
    columns = FORMS[form]
    if columns is None:
        a, b = fit_linear_and_square(train)
        return a * m + b * m * m
    x = np.array([columns(mm) for mm, _ in train], dtype=float)
    coef = np.linalg.lstsq(x, np.array([y for _, y in train]), rcond=None)[0]
    return float(np.dot(coef, columns(m)))


def combine_forms(samples: dict[str, list[tuple[int, float]]]) -> dict[str, dict[str, list[float]]]:
    """Per combine (seed, key) and form, the relative error at each size when that size is left out of the
    fit (the median per size, as the model's fit takes): a form earns its constants only where it
    predicts sizes it did not see."""
    out: dict[str, dict[str, list[float]]] = {}
    for name in ("combine_seed", "combine_key"):
        points = typical_per_size(samples[name])
        out[name] = {"sizes": [m for m, _ in points]}  # type: ignore[dict-item]
        for form in FORMS:
            out[name][form] = [(_predict(form, points[:i] + points[i + 1:], m) - y) / y
                               for i, (m, y) in enumerate(points)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="three rounds, fewer sizes (a smoke test)")
    args = ap.parse_args()
    logging.getLogger("flwr").setLevel(logging.ERROR)
    t0 = time.perf_counter()
    samples = measure_secagg_samples(args.repeats)
    for _ in range(args.repeats):  # per-stage bookkeeping, as measure_secagg_costs does
        tiny = measure_secagg_round(3, 3, 1000)
        samples.add("client_stage", 0, tiny.client_s["unmask"])
        samples.add("server_client", 0, tiny.server_s["setup"] / 3)
    consts = fit_constants(samples, machine=machine_description(),
                           measured=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    print(f"SecAgg+ primitives on {consts.machine} ({consts.measured}), median of {args.repeats} passes:")
    for name, value in consts.to_json().items():
        if isinstance(value, float):
            print(f"  {name:<36} {value * 1e3:>12.5f} ms")
    rows = []
    for n, shares, length, dropped in (ROUNDS[:3] if args.quick else ROUNDS):
        client, server = _typical_round(n, shares, length, dropped, args.repeats)
        model_c = client_round_s(shares, length, consts)
        model_s = server_round_s(n, shares, length, consts, dropped)
        rows.append({"clients": n, "shares": shares, "vector_len": length, "dropped": dropped,
                     "client_measured_s": client, "client_model_s": model_c,
                     "server_measured_s": server, "server_model_s": model_s})
    print(f"\n{'clients':>7} {'shares':>6} {'values':>9} {'drop':>4}  {'stage':<23} "
          f"{'client ms (meas/model)':>24} {'server ms (meas/model)':>24}")
    for r in rows:
        for s in STAGES:
            print(f"{r['clients']:>7} {r['shares']:>6} {r['vector_len']:>9} {r['dropped']:>4}  {s:<23} "
                  f"{r['client_measured_s'][s] * 1e3:>11.2f} / {r['client_model_s'][s] * 1e3:<10.2f} "
                  f"{r['server_measured_s'][s] * 1e3:>11.2f} / {r['server_model_s'][s] * 1e3:<10.2f}")
    forms = combine_forms(samples.samples)
    for name, by_form in forms.items():
        print(f"\n{name}: relative error at each size left out of the fit ({by_form['sizes']})")
        for form, errors in by_form.items():
            if form != "sizes":
                print(f"  {form:<32} median |error| {100 * float(np.median(np.abs(errors))):5.1f} %")
    out = ROOT / "benchmarks/results/secagg-costs.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    from fedbw.netmodel.version import model_version

    out.write_text(json.dumps({"constants": consts.to_json(), "samples": samples.samples, "rounds": rows,
                               "combine_forms": forms, "repeats": args.repeats, "took_s": time.perf_counter() - t0,
                               "made_by": {"model_version": model_version(), "calibration": "fitted in this run"}},
                              indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out.relative_to(ROOT)} ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
