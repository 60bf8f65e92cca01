"""Which of the model's constants earn their place: bootstrap intervals and cross-validated ablation.

Why: a constant fitted to noise moves predictions without describing Flower, and no in-sample residual
shows it. Two checks on a calibration's own measured messages (never on a validation grid):

* **interval** — the fit repeated on bootstrap resamples of the messages (drawn with replacement within
  each calibration run, the aggregation timings likewise); the 5th and 95th percentiles of each constant;
* **held-out error** — k-fold cross-validation: fit on k−1 folds, predict the held-out fold's spans
  (:data:`FAMILIES`), each with the same expression the clock uses; then the same with one constant held at
  0 and everything else refitted. A constant **earns its place** when its family's held-out error is lower
  with it, by more than twice the standard error of that improvement across the folds.

The verdict (docs/methodology.md): ``earns`` as above; ``goes`` when it does not and its interval reaches 0
(a constant fitted to noise: removed from the model with its code, and named in
:data:`fedbw.calibration.file.RETIRED`); ``unproven`` when it does not earn its place but its interval
excludes 0 (a real cost the held-out spans cannot show: kept, and said so).

Pure arithmetic on a measured-messages file: seconds, no Flower process.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedbw.calibrate.fit import (PROBE, REAL, SHAPED_RUNS, UNSHAPED, costs_of, empty_pull_gaps, fit_all,
                                 from_receiving, nonnegative_lstsq, shaped_array_shares, shaped_messages)
from fedbw.netmodel.flower import MIB, FlowerCosts
from fedbw.netmodel.terms import AGGREGATION, HOP, constants_of_terms
from fedbw.results.messages import MeasuredMessage

#: A prediction family: the spans one part of the clock predicts, as (measured, predicted) pairs.
Family = Callable[[FlowerCosts, Sequence[MeasuredMessage], Sequence[Sequence[float]]], Iterator[tuple[float, float]]]


def _unshaped_pairs(c: FlowerCosts, msgs: Sequence[MeasuredMessage], directions: Sequence[str] = ("down", "up"),
                    ) -> Iterator[tuple[float, float]]:
    for m in msgs:
        if m.run in (UNSHAPED, PROBE):
            for d in directions:
                if getattr(m, f"objects_{d}"):
                    yield getattr(m, f"t_{d}_s"), HOP.seconds(c, objects=getattr(m, f"objects_{d}"),
                                                              nbytes=getattr(m, f"flower_bytes_{d}"))


def _unshaped_transfers(c: FlowerCosts, msgs: Sequence[MeasuredMessage], _: object) -> Iterator[tuple[float, float]]:
    yield from _unshaped_pairs(c, msgs)


def hop_by_direction(messages: Sequence[MeasuredMessage], aggregation: Sequence[Sequence[float]],
                     ) -> dict[str, dict[str, float | None]]:
    """The hop term, fitted on unshaped downloads and uploads together, held against each direction alone:
    how many transfers and their median measured ÷ predicted. One term for both directions is the model's
    assumption; medians far from 1 on opposite sides say a pull and a push cost the SuperNode different work
    per object, which the one term averages (a diagnosis on calibration messages, not a fit)."""
    costs = costs_of(fit_all(messages, aggregation))
    out: dict[str, dict[str, float | None]] = {}
    for d in ("down", "up"):
        ratios = [m / p for m, p in _unshaped_pairs(costs, messages, (d,)) if p > 0]
        out[d] = {"transfers": len(ratios),
                  "median_measured_over_predicted": statistics.median(ratios) if ratios else None}
    return out


#: The ServerApp's own work the clock lays (:meth:`FlowerCosts.serverapp_pull_s` for each reply; for its push the
#: local-copy term of the message, as ``DeploymentClock._lay_stage`` does for a stage's largest): name → (the
#: message's field timed, how many messages it moved, the clock's expression).
SERVERAPP_WORK: dict[str, tuple[str, str, Callable[[FlowerCosts, MeasuredMessage], float]]] = {
    "pull": ("t_serverapp_pull_s", "serverapp_pulled_with",
             lambda c, m: c.serverapp_pull_s(m.objects_up, m.flower_bytes_up)),
    "push": ("t_serverapp_push_s", "serverapp_pushed_with", lambda c, m: c.local_cpu_s(m.flower_bytes_down)),
}


def pulled_after_upload(m: MeasuredMessage) -> bool:
    """Whether the ServerApp's pull that brought ``m``'s reply started after the reply's last byte reached the
    SuperLink: only then is its time the pull's own work. (A pull that starts while the reply still uploads
    takes its objects behind the upload, Flower's backoff between them, and its time is mostly the upload's.)"""
    poll = m.parts.get("serverapp_poll_s")
    return m.t_serverapp_pull_s is not None and poll is not None and m.t_serverapp_pull_s <= poll + 1e-6


def serverapp_work(messages: Sequence[MeasuredMessage], costs: FlowerCosts) -> dict[str, dict[str, Any]]:
    """The ServerApp's push and its pull of each reply as the ServerApp timed them (messages measured since
    2026-12-08, each moved alone; pulls only where :func:`pulled_after_upload`), against what the clock lays
    for them with ``costs``, and each fitted on the hop term's features (objects, MiB), as its own term would
    be (where the messages have more than one object count).

    Why: the clock charges the ServerApp's pull of a reply as a hop and its push per MiB alone; neither was
    ever timed (the pull hides in the ServerApp's 3 s poll unless a reply holds hundreds of objects). A
    diagnosis on measured messages, not a fit the model uses."""
    out: dict[str, dict[str, Any]] = {}
    for name, (timed, moved, predict) in SERVERAPP_WORK.items():
        pairs, rows, objects, seen, behind = [], [], [], set(), 0
        for m in messages:
            t, n = getattr(m, timed), getattr(m, moved)
            k, nbytes = (m.objects_up, m.flower_bytes_up) if name == "pull" else (m.objects_down, m.flower_bytes_down)
            if t is None or n != 1 or m.error is not None or not k:
                continue
            seen.add(k)
            if name == "pull" and not pulled_after_upload(m):
                behind += 1
                continue
            pairs.append((t, predict(costs, m)))
            rows.append(HOP.row(objects=k, nbytes=nbytes))
            objects.append(k)
        #: "objects": the object counts of every message timed alone (those left out behind an upload too)
        row: dict[str, Any] = {"messages": len(pairs), "objects": sorted(seen)}
        if name == "pull":
            row["pulled_behind_the_upload"] = behind
        if pairs:
            a, b = np.array(rows), np.array([t for t, _ in pairs])
            x = nonnegative_lstsq(a, b) if len(set(objects)) > 1 else np.full(a.shape[1], float("nan"))
            row.update(median_measured_s=statistics.median(b.tolist()),
                       median_predicted_s=statistics.median(p for _, p in pairs),
                       median_measured_over_predicted=statistics.median(t / p for t, p in pairs if p > 0)
                       if any(p > 0 for _, p in pairs) else None,
                       fitted={k: _finite(float(v)) for k, v in zip(HOP.constants, x)})
        out[name] = row
    return out


def _app_code(c: FlowerCosts, msgs: Sequence[MeasuredMessage], _: object) -> Iterator[tuple[float, float]]:
    """"Receiving" → the app's code runs: the SuperExec's poll at its mean, the start, then the clock's way
    to the app's code behind the measured download."""
    from fedbw.netmodel.flower import app_code_runs_s

    for m in msgs:
        if (m.run == UNSHAPED or m.run in SHAPED_RUNS) and m.process_start_s is not None:
            _, t_received, t_app = from_receiving(m)
            t_launch = c.superexec_poll_s / 2
            yield t_app, app_code_runs_s(c, t_launch + c.clientapp_start_s, t_received, max(1, m.objects_down),
                                         m.flower_bytes_down)


def _shaped_downloads(c: FlowerCosts, msgs: Sequence[MeasuredMessage], _: object) -> Iterator[tuple[float, float]]:
    from fedbw.netmodel.flower import download_alone_s, objects_alone_s

    shares = shaped_array_shares()
    for m, link in shaped_messages(msgs):
        if m.t_down_s:
            objects = objects_alone_s(c, m.flower_bytes_down, max(1, m.objects_down), link.down_bytes_per_s,
                                      link.rtt_s, 1.0, shares)
            yield m.t_down_s, download_alone_s(c, link.rtt_s, objects)


def _empty_pulls(c: FlowerCosts, msgs: Sequence[MeasuredMessage], _: object) -> Iterator[tuple[float, float]]:
    for gap in empty_pull_gaps([m for m in msgs if m.run == UNSHAPED], c):
        yield gap, c.request_s


def _app_setup(c: FlowerCosts, msgs: Sequence[MeasuredMessage], _: object) -> Iterator[tuple[float, float]]:
    for m in msgs:
        if m.run == REAL:
            yield m.parts.get("app_other_s", 0.0), c.app_setup_s


def _aggregation(c: FlowerCosts, _: object, samples: Sequence[Sequence[float]]) -> Iterator[tuple[float, float]]:
    for k, mib, t in samples:
        yield t, AGGREGATION.seconds(c, reply_bytes=k * mib * MIB)


#: The spans the clock predicts from the constants, each with the expression it uses.
FAMILIES: dict[str, Family] = {
    "unshaped transfer": _unshaped_transfers, "ClientApp to the app's code": _app_code,
    "shaped download": _shaped_downloads, "empty pull": _empty_pulls, "app set-up": _app_setup,
    "aggregation": _aggregation,
}
#: The family each term's constants are judged on.
FAMILY_OF_TERM = {"hop": "unshaped transfer", "local_copy": "ClientApp to the app's code",
                  "clientapp_start": "ClientApp to the app's code", "clientapp_work": "ClientApp to the app's code",
                  "download_round_trips": "shaped download",
                  "request": "empty pull", "app_setup": "app set-up", "aggregation": "aggregation"}


@dataclass(frozen=True)
class ConstantVerdict:
    name: str
    term: str
    family: str
    value: float  #: fitted on every message
    low: float  #: bootstrap 5th percentile
    high: float  #: bootstrap 95th percentile
    error_with_s: float  #: held-out mean |error| of its family, all terms fitted
    error_without_s: float  #: the same with this constant held at 0
    improvement_s: float  #: mean over folds of (without − with)
    improvement_se_s: float  #: its standard error over the folds
    earns_place: bool
    verdict: str  #: "earns" | "unproven" | "goes"


def _mean_abs(pairs: Sequence[tuple[float, float]]) -> float:
    return statistics.fmean(abs(a - b) for a, b in pairs) if pairs else float("nan")


def _finite_mean(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return statistics.fmean(finite) if finite else float("nan")


def _strata(messages: Sequence[MeasuredMessage]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, m in enumerate(messages):
        out.setdefault(m.run, []).append(i)
    return out


def bootstrap(messages: Sequence[MeasuredMessage], aggregation: Sequence[Sequence[float]], resamples: int = 200,
              seed: int = 0) -> dict[str, tuple[float, float]]:
    """Each constant's 5th–95th percentile over fits of resampled messages (within each run) and timings."""
    rng = random.Random(seed)
    strata = _strata(messages)
    draws: dict[str, list[float]] = {}
    for _ in range(resamples):
        picked = [messages[rng.choice(idx)] for idx in strata.values() for _ in idx]
        agg = [aggregation[rng.randrange(len(aggregation))] for _ in aggregation]
        for k, c in fit_all(picked, agg).items():
            draws.setdefault(k, []).append(c.value)
    out = {}
    for k, values in draws.items():
        values.sort()
        out[k] = (values[int(0.05 * (len(values) - 1))], values[int(0.95 * (len(values) - 1))])
    return out


def _folds(n: int, k: int, rng: random.Random, strata: dict[str, list[int]] | None = None) -> list[set[int]]:
    folds: list[set[int]] = [set() for _ in range(k)]
    groups = list(strata.values()) if strata is not None else [list(range(n))]
    for idx in groups:
        idx = list(idx)
        rng.shuffle(idx)
        for j, i in enumerate(idx):
            folds[j % k].add(i)
    return folds


def _held_out(messages: Sequence[MeasuredMessage], aggregation: Sequence[Sequence[float]], k: int, seed: int,
              without: frozenset[str]) -> list[dict[str, float]]:
    """Per fold: each family's mean |error| on the held-out messages, fitted on the rest."""
    rng = random.Random(seed)
    m_folds = _folds(len(messages), k, rng, _strata(messages))
    a_folds = _folds(len(aggregation), k, rng)
    out = []
    for mf, af in zip(m_folds, a_folds):
        train = [m for i, m in enumerate(messages) if i not in mf]
        test = [m for i, m in enumerate(messages) if i in mf]
        agg_train = [s for i, s in enumerate(aggregation) if i not in af]
        agg_test = [s for i, s in enumerate(aggregation) if i in af]
        costs = costs_of(fit_all(train, agg_train, without))
        out.append({name: _mean_abs(list(family(costs, test, agg_test))) for name, family in FAMILIES.items()})
    return out


def evaluate(messages: Sequence[MeasuredMessage], aggregation: Sequence[Sequence[float]], folds: int = 5,
             resamples: int = 200, seed: int = 0) -> tuple[list[ConstantVerdict], dict[str, float]]:
    """Every fitted constant's verdict, and each family's held-out error with every term fitted."""
    fitted = fit_all(messages, aggregation)
    intervals = bootstrap(messages, aggregation, resamples, seed)
    base = _held_out(messages, aggregation, folds, seed, frozenset())
    owner = constants_of_terms()
    verdicts = []
    for name in sorted(fitted):
        family = FAMILY_OF_TERM[owner[name]]
        ablated = _held_out(messages, aggregation, folds, seed, frozenset({name}))
        gains = [a[family] - b[family] for a, b in zip(ablated, base)
                 if not (math.isnan(a[family]) or math.isnan(b[family]))]
        mean = statistics.fmean(gains) if gains else float("nan")
        se = statistics.stdev(gains) / len(gains) ** 0.5 if len(gains) > 1 else float("nan")
        low, high = intervals.get(name, (fitted[name].value, fitted[name].value))
        earns = bool(gains) and mean > 0 and mean > 2 * se
        verdict = "earns" if earns else ("goes" if low <= 0.0 else "unproven")
        verdicts.append(ConstantVerdict(name, owner[name], family, fitted[name].value, low, high,
                                        _finite_mean([f[family] for f in base]),
                                        _finite_mean([f[family] for f in ablated]), mean, se, earns, verdict))
    families = {name: _finite_mean([f[name] for f in base]) for name in FAMILIES}
    return verdicts, families


def _finite(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def as_json(verdicts: Sequence[ConstantVerdict], families: dict[str, float], **meta: Any) -> dict[str, Any]:
    """Plain JSON (NaN, for a family no message exercised, as null)."""
    return {**meta, "constants": [{k: _finite(v) for k, v in dataclasses.asdict(x).items()} for x in verdicts],
            "families_held_out_error_s": {k: _finite(v) for k, v in families.items()}}
