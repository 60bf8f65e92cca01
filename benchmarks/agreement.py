"""Do the engines agree where they should? estimate and simulate (the model) against emulate (Flower's
Deployment Engine on shaped sockets), which shares no code with the model that makes a number.

Cases (``--case``):

* ``deployment`` (issue 10): whole rounds under the Flower-deployment cost model — fedbw's quickstart
  shape (small CNN, real training: framework-dominated) and ResNet-18 on home-30 and home-50 (synthetic
  compute: link-dominated), 1 and 2 clients, estimate / simulate / emulate; Flower's message-API
  quickstart shape under ``simulate --app`` / ``emulate --app``; and 20 clients behind a 1 GbE server
  (estimate and simulate) to show the server-bound download. Target: steady rounds within 10 %.
* ``emulation`` (issue 11): emulate against simulate (framework and server-link model on) per transfer
  and per round, ResNet-18 with 2, 4 and 8 clients, with and without time dilation, the host-bound
  share beside each row. Targets with dilation: transfers of ≥ 1 s within 2 %, rounds within 5 %. A
  download whose first byte came before the ServerApp had pushed the message's objects (the apps log the
  push's end) waited on Flower's pull backoff, a phase the model averages: such downloads are counted and
  the transfers within 2 % are also given without them. With ``--trials N`` each row runs emulate N
  times: rounds pooled (their standard error beside the mean), and each transfer of one run against the
  same transfer of another (*emulate vs itself*): two runs further apart than 4.1 % cannot both be
  within 2 % of any one model time, which bounds what a model can reach.
* ``privacy`` (issue 10): the privacy-overhead study (experiments/privacy-overhead.toml, simulate,
  re-timed under the deployment model) against an emulate run of each variant's own config (dilated):
  steady round times. Target: within 15 %.
* ``link``: the shaper + network model alone, a one-array app, transfers ≥ 1 s (target ±2 %).
* ``scale``: N SuperNodes on this machine: set-up, round time, memory, framework time.

Writes benchmarks/results/agreement-<case>.json; `fedbw docs` regenerates docs/fidelity.md's tables from
it. Usage: .venv/bin/python benchmarks/agreement.py --case deployment [--rounds 4]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedbw.config import config_from_dict  # noqa: E402
from fedbw.netmodel import transfer_time_s  # noqa: E402
from fedbw.errors import FedbwError  # noqa: E402
from fedbw.runner import run_experiment  # noqa: E402
from fedbw.engines.emulate.run import messages_by_key, read_summary  # noqa: E402

SCALE_CONFIG: dict[str, Any] = {
    "name": "scale", "seed": 0, "model": {"name": "small-cnn"},
    "clients": {"total": 16, "per_round": 16, "compute": "synthetic"},
    "training": {"rounds": 1}, "network": {"profile": "home-30"},
}


#: ``--reuse DIR``: finished run directories of an earlier, interrupted run of this benchmark.
REUSE: list[Path] = []
#: The runs taken from ``--reuse`` directories instead of run again: config name, engine, run directory
#: name and when the run started; the report says which numbers are older than its date.
REUSED: list[dict[str, str | None]] = []


def run(cfg_dict: dict[str, Any], engine: str, out: Path) -> Any:
    cfg = config_from_dict({**cfg_dict, "engine": engine, "output_dir": str(out)})
    t0 = time.perf_counter()
    result = _reused(cfg)
    if result is not None:
        _note_reused(cfg.name, engine, Path(result.run_dir))
    else:
        result = run_experiment(cfg)
    print(f"  {engine}: {len(result.rounds)} round(s) in {time.perf_counter() - t0:.1f} s → {result.run_dir}",
          flush=True)
    return result


#: ``--rescale-to-host`` sets it: estimate and simulate get the catalog's CPU constants rescaled to the
#: host's reference timed around each emulate run.
RESCALE = [False]
#: ``--trials N``: emulate runs per deployment case or emulation row (the reused ones count), averaged: on
#: a shared VM one run's round moves by a tenth or more from one run to the next, and Flower's poll grids
#: move a single round by whole steps.
TRIALS = [1]
#: ``--calibration FILE``: the calibration estimate and simulate use (None: the catalog's).
CALIBRATION: list[Path | None] = [None]
#: Beside each emulate run: the host's reference (a fresh ClientApp load) before and after it.
REFERENCE_FILE = "host-reference.json"


def emulate_at_host_speed(cfg_dict: dict[str, Any], out: Path, fresh: bool = False) -> tuple[Any, float | None]:
    """An emulate run with the host's speed measured right before and after it (kept beside the run, so a
    ``--reuse`` of the run keeps it too); returns the run and the mean reference (None: a reused run that
    has none). ``fresh``: run it even if a ``--reuse`` directory holds one (another trial)."""
    from fedbw.engines.app_start import host_reference_s

    cfg = config_from_dict({**cfg_dict, "engine": "emulate", "output_dir": str(out)})
    if not fresh and (done := _reused(cfg)) is not None:
        _note_reused(cfg.name, "emulate", Path(done.run_dir))
        return done, _host_reference(Path(done.run_dir), None, None)
    before = host_reference_s()
    t0 = time.perf_counter()
    res = run_experiment(cfg)
    print(f"  emulate: {len(res.rounds)} round(s) in {time.perf_counter() - t0:.1f} s → {res.run_dir}", flush=True)
    return res, _host_reference(Path(res.run_dir), before, host_reference_s)


def _host_reference(run_dir: Path, before: float | None, measure: Any) -> float | None:
    path = run_dir / REFERENCE_FILE
    if path.is_file():  # reused: the reference measured when it ran
        ref = json.loads(path.read_text())
        return statistics.mean([ref["before_s"], ref["after_s"]])
    if before is None or measure is None:
        return None
    after = measure()
    path.write_text(json.dumps({"before_s": before, "after_s": after}) + "\n")
    return statistics.mean([before, after])


def model_calibration(out: Path, reference_s: float | None) -> tuple[str | None, float | None]:
    """The calibration estimate and simulate use beside an emulate run, and the host's reference then ÷
    the calibration's (None: not known). ``--calibration``'s file, else the catalog's, as it is; with
    ``--rescale-to-host``, its CPU constants × that factor. The rescale is not the default: on this VM the
    reference, timed around each run, moved by more than the costs the emulate runs measured did."""
    from fedbw.calibration.file import HOST_REFERENCE, at_host_speed, write_calibration

    cal = base_calibration()
    given = None if CALIBRATION[0] is None else str(CALIBRATION[0])
    own = cal.provenance.get(HOST_REFERENCE)
    if reference_s is None or not own:
        return given, None
    if not RESCALE[0]:
        return given, reference_s / own
    scaled = at_host_speed(cal, reference_s)
    path = out / f"calibration-at-{reference_s:.4f}s.toml"
    write_calibration(path, scaled)
    return str(path), scaled.provenance["rescaled_by"]


def base_calibration() -> Any:
    """``--calibration``'s file, else the catalog's."""
    from fedbw.calibration.file import default_calibration, read_calibration

    return default_calibration() if CALIBRATION[0] is None else read_calibration(CALIBRATION[0])


def calibration_record() -> dict[str, Any]:
    """Which calibration the model used, for the report: its provenance and file (repo-relative)."""
    path = CALIBRATION[0]
    where = "catalog" if path is None else (str(path.resolve().relative_to(ROOT)) if path.resolve().is_relative_to(ROOT)
                                            else str(path))
    return {**base_calibration().provenance, "file": where}


def with_calibration(cfg: dict[str, Any], path: str | None) -> dict[str, Any]:
    return cfg if path is None else {**cfg, "deployment": {**cfg.get("deployment", {}), "calibration": path}}


def scale(out: Path, n: int, dilation: str) -> dict[str, Any]:
    cfg = {**SCALE_CONFIG, "clients": {**SCALE_CONFIG["clients"], "total": n, "per_round": n},
           "emulate": {"dilation": "auto" if dilation == "auto" else float(dilation)}}
    res = run(cfg, "emulate", out)
    summary = read_summary(Path(res.run_dir))
    msgs = [m for m in summary["messages"] if m["error"] is None]
    starts = sorted(m["parts"]["clientapp_start_s"] for m in msgs)
    rnd = res.rounds[0]
    return {"supernodes": n, "startup_s": summary["startup_s"], "run_wall_s": summary["run_wall_s"],
            "round_time_s": rnd.round_time_s, "comm_time_s": rnd.comm_time_s,
            "framework_time_s": rnd.framework_time_s, "peak_rss_bytes": summary["peak_rss_bytes"],
            "clientapp_start_median_s": statistics.median(starts) if starts else None,
            "clientapp_start_max_s": starts[-1] if starts else None,
            "framework_parts_s": rnd.extra.get("framework_parts_s", {}),
            "dilation": summary.get("dilation", 1.0), "host_share": rnd.host.share if rnd.host else None}


LINK_PROFILES = ("home-30", "mobile-4g")
FIXTURE_APP = ROOT / "tests" / "engines" / "fixtures" / "numpy_app"


def link_fidelity(num_params: int, rounds: int) -> list[dict[str, Any]]:
    """The shaper + network model alone: a one-array NumPy app (single large object per message, so no
    per-object round trips), one client per profile, light CPU load. Every payload ≥ 1 s vs the model."""
    from fedbw.engines.emulate import EmulatedClient, emulate_app
    from fedbw.engines.emulate.clients import clients_for_profile

    clients = [EmulatedClient(i, p, clients_for_profile(1, p, seed=i)[0].link) for i, p in enumerate(LINK_PROFILES)]
    t0 = time.perf_counter()
    res = emulate_app(FIXTURE_APP, clients, run_config={"min-clients": len(clients), "num-server-rounds": rounds,
                                                        "num-params": num_params})
    print(f"  link fidelity (NumPy app, {num_params:,} float32): {time.perf_counter() - t0:.1f} s", flush=True)
    rows = []
    for m in res.messages:
        link = clients[m.client_id].link
        for d, tr, rate, lat_ms in (("down", m.down, link.down_mbps, link.latency_down_ms),
                                    ("up", m.up, link.up_mbps, link.latency_up_ms)):
            if tr.bulk_duration_s < 1.0:
                continue
            predicted = transfer_time_s(tr.bulk_bytes, rate, lat_ms / 1e3)
            rows.append({"round": int(m.span.group or 0), "client": m.client_id,
                         "profile": clients[m.client_id].profile,
                         "stage": "fit", "dir": d, "bytes": tr.bulk_bytes, "rate_mbps": rate,
                         "measured_s": tr.bulk_duration_s, "predicted_s": predicted,
                         "error": tr.bulk_duration_s / predicted - 1, "sender_idle_s": tr.sender_idle_s,
                         "message_s": tr.duration_s})
    return rows


def summarize(transfers: list[dict[str, Any]]) -> dict[str, Any]:
    """Raw errors, and errors of the link-limited time (measured minus time the sender left the link idle)."""
    for t in transfers:
        t["link_limited_s"] = t["measured_s"] - t["sender_idle_s"]
        t["link_limited_error"] = t["link_limited_s"] / t["predicted_s"] - 1
    raw = [abs(t["error"]) for t in transfers]
    lim = [abs(t["link_limited_error"]) for t in transfers]
    return {"transfers_ge_1s": len(transfers),
            "with_sender_idle_over_50ms": sum(t["sender_idle_s"] >= 0.05 for t in transfers),
            "raw_within_2pct": sum(e <= 0.02 for e in raw),
            "raw_median_abs_error": statistics.median(raw) if raw else None,
            "raw_max_abs_error": max(raw, default=None),
            "link_limited_within_2pct": sum(e <= 0.02 for e in lim),
            "link_limited_median_abs_error": statistics.median(lim) if lim else None,
            "link_limited_max_abs_error": max(lim, default=None)}


def deployment(out: Path, rounds: int, clients_list: list[int], skip_apps: bool, dilation: str,
               short_rounds: int | None = None) -> dict[str, Any]:
    """Round times of the three engines (and of the two app paths) on the same federation. Flower's poll
    grids move a round of a few polls by a whole 3 s step from one round to the next, so the cases whose
    round is short (fedbw's quickstart shape, the message-API app: ``SHORT_CASES``) run ``short_rounds``
    rounds each, enough steady rounds for their mean; the link-dominated ones ``rounds``."""
    from fedbw.runner import run_app

    cases: list[dict[str, Any]] = []
    for name, base in DEPLOYMENT_CASES:
        r = (short_rounds or rounds) if name in SHORT_CASES else rounds
        for n in clients_list:
            cfg = {**base, "name": f"{name}-{n}", "training": {**base.get("training", {}), "rounds": r},
                   "clients": {**base["clients"], "total": n, "per_round": n}}
            k: Any = "auto" if dilation == "auto" else float(dilation)
            emu_cfg = {**cfg, "emulate": {"dilation": k}}
            trials, failures = emulate_trials(emu_cfg, out)
            if failures:
                raise FedbwError(f"emulate of {cfg['name']} failed: {failures[0]}")
            references = [r for _, r in trials if r is not None]
            cal, factor = model_calibration(out, statistics.mean(references) if references else None)
            runs = {engine: run(with_calibration(cfg, cal), engine, out) for engine in ("estimate", "simulate")}
            row = case_row(name, n, {**{e: r.rounds for e, r in runs.items()},
                                     "emulate": [r for t, _ in trials for r in t.rounds]})
            row["engines"]["emulate"]["trials_s"] = [
                statistics.mean(r.round_time_s for r in steady_rounds(t.rounds)) for t, _ in trials]
            cases.append({**row, "host_speed": factor})
    apps: list[dict[str, Any]] = []
    if not skip_apps:
        for n in [n for n in clients_list if n >= APP_MIN_NODES]:
            from fedbw.engines.app_start import host_reference_s

            r = short_rounds or rounds
            emu = _reused_app(f"app-emu-{n}", "emulate --app", r)
            before = None if emu else host_reference_s()
            emu = emu or run_app(QUICKSTART_APP, n, "home-30", engine="emulate", rounds=r, out_dir=out / f"app-emu-{n}",
                                 dilation="auto" if dilation == "auto" else float(dilation))
            run_dir = Path(getattr(emu, "run_dir", None) or emu.out_dir)  # a reused run, or emulate --app's
            cal, factor = model_calibration(out, _host_reference(run_dir, before, host_reference_s))
            sim = _reused_app(f"app-sim-{n}", "simulate --app", r) if cal is None else None
            sim = sim or run_app(QUICKSTART_APP, n, "home-30", engine="simulate", rounds=r,
                                 out_dir=out / f"app-sim-{n}", calibration=cal)
            apps.append({**case_row("message-API quickstart app", n, {"simulate": sim.rounds, "emulate": emu.rounds}),
                         "host_speed": factor})
    bound = server_bound(out)
    return {"cases": cases, "apps": apps, "server_bound": bound, "emulate_dilation": dilation,
            "calibration": calibration_record()}


def case_row(name: str, n: int, rounds_by_engine: dict[str, list[Any]]) -> dict[str, Any]:
    """Per engine: every round's time and parts, and the steady mean (rounds ≥ 2) against emulate's."""
    row: dict[str, Any] = {"case": name, "clients": n, "engines": {}}
    for engine, rounds in rounds_by_engine.items():
        steady = steady_rounds(rounds)
        row["engines"][engine] = {
            "round_s": [r.round_time_s for r in rounds], "comm_s": [r.comm_time_s for r in rounds],
            "compute_s": [r.compute_time_s for r in rounds], "framework_s": [r.framework_time_s for r in rounds],
            "steady_round_s": statistics.mean(r.round_time_s for r in steady) if steady else None,
            **{f"steady_{k}_s": statistics.mean(getattr(r, f"{k}_time_s") for r in steady) if steady else None
               for k in ("comm", "compute", "framework")},
            "steady_parts_s": steady_parts(steady)}
    ref = row["engines"].get("emulate", {}).get("steady_round_s")
    for engine, v in row["engines"].items():
        v["vs_emulate"] = (v["steady_round_s"] / ref - 1) if ref and v["steady_round_s"] is not None else None
    return row


def steady_parts(rounds: list[Any]) -> dict[str, float]:
    """The framework time of steady rounds by part (each round's ``framework_parts_s``: the critical
    client's parts and the server's), means; a part a round lacks counts 0 there."""
    keys = sorted({k for r in rounds for k in r.extra.get("framework_parts_s", {})})
    return {k: statistics.mean(r.extra.get("framework_parts_s", {}).get(k, 0.0) for r in rounds) for k in keys}


def server_bound(out: Path) -> dict[str, Any]:
    """20 clients behind a 1 GbE server: the downloads share the server's uplink (estimate and simulate)."""
    base = {**SERVER_BOUND_CONFIG}
    rows = {}
    for link in ("server-1g", "none"):
        cfg = {**base, "name": f"server-bound-{link}", "server": {"link": link}}
        for engine in ("estimate", "simulate"):
            res = run(cfg, engine, out)
            r = res.rounds[-1]
            crit = max((c for c in res.clients if c.round == r.round), key=lambda c: c.t_down_s)
            rows[f"{engine}/{link}"] = {"round_s": r.round_time_s, "t_down_s": crit.t_down_s,
                                        "server_link_s": r.extra.get("server_link_s")}
    return rows


#: The deployment cases: (name, config). Compute: real for the quickstart (as a user runs it), synthetic
#: (the device profile's time, spent as a sleep under emulate) for ResNet-18.
DEPLOYMENT_CASES: list[tuple[str, dict[str, Any]]] = [
    ("quickstart (small-cnn, real training, home-30)",
     {"seed": 0, "model": {"name": "small-cnn"}, "data": {"dataset": "digits"},
      "clients": {"compute": "real"}, "training": {"local_epochs": 3}, "network": {"profile": "home-30"}}),
    ("resnet18 (synthetic compute, home-30)",
     {"seed": 0, "model": {"name": "resnet18"}, "clients": {"compute": "synthetic", "device_profile": "desktop-gpu"},
      "network": {"profile": "home-30"}}),
    ("resnet18 (synthetic compute, home-50)",
     {"seed": 0, "model": {"name": "resnet18"}, "clients": {"compute": "synthetic", "device_profile": "desktop-gpu"},
      "network": {"profile": "home-50"}}),
]
#: Cases whose round is a few of Flower's polls (framework-dominated): ``--short-rounds`` rounds each.
SHORT_CASES = frozenset({DEPLOYMENT_CASES[0][0]})
QUICKSTART_APP = ROOT / "tests" / "engines" / "fixtures" / "quickstart_app"
#: The fixture, like Flower's templates, uses FedAvg's default min_available_nodes = 2: with one
#: client its ServerApp waits for a second node for ever.
APP_MIN_NODES = 2
SERVER_BOUND_CONFIG: dict[str, Any] = {
    "seed": 0, "model": {"name": "resnet18"}, "training": {"rounds": 2},
    "clients": {"total": 20, "per_round": 20, "compute": "synthetic", "device_profile": "dc-gpu"},
    "network": {"profile": "home-30"}}


#: issue 11's federation: link-dominated rounds (ResNet-18 uploads take ≈ 13 s on home-30).
EMULATION_CONFIG: dict[str, Any] = {
    "seed": 0, "model": {"name": "resnet18"}, "network": {"profile": "home-30"},
    "clients": {"compute": "synthetic", "device_profile": "desktop-gpu"}}


def emulation(out: Path, rounds: int, clients_list: list[int], dilations: list[str],
              cap_periods: list[int | None] | None = None) -> dict[str, Any]:
    """emulate (undilated and dilated) against simulate on the same plan, per transfer and per round;
    with ``--trials N``, N emulate runs per row: their steady rounds pooled, and emulate against itself
    (the same transfer in two runs of one config), which bounds how closely any model can agree.
    ``cap_periods``: a row per period of the devices' CPU caps (``emulate.cap_period_ms``), in that order."""
    rows = []
    for n in clients_list:
        cfg = {**EMULATION_CONFIG, "name": f"emulation-{n}", "training": {"rounds": rounds},
               "clients": {**EMULATION_CONFIG["clients"], "total": n, "per_round": n}}
        for k in dilations:
            for i, period in enumerate(cap_periods or [None]):
                emulate = {"dilation": "auto" if k == "auto" else float(k)}
                # a name per position: --reuse then resumes each entry, a period asked twice included
                name = cfg["name"] if period is None else f"{cfg['name']}-{i + 1}-period-{period}"
                emu_cfg = {**cfg, "name": name,
                           "emulate": emulate if period is None else {**emulate, "cap_period_ms": period}}
                trials, failures = emulate_trials(emu_cfg, out)
                if not trials:  # a failed run is a row that says so, not a lost benchmark
                    rows.append({"clients": n, "dilation_setting": k, "cap_period_ms": period, "error": failures[0]})
                    continue
                references = [r for _, r in trials if r is not None]
                cal, factor = model_calibration(out, statistics.mean(references) if references else None)
                sim = run(with_calibration(cfg, cal), "simulate", out)
                row = {**emulation_row(n, sim, [t for t, _ in trials]), "host_speed": factor}
                if period is not None:
                    row["cap_period_ms"] = period
                rows.append({**row, "failed_trials": failures} if failures else row)
    return {"rows": rows, "config": EMULATION_CONFIG, "rounds": rounds, "trials": TRIALS[0],
            "calibration": calibration_record()}


def emulate_trials(emu_cfg: dict[str, Any], out: Path) -> tuple[list[tuple[Any, float | None]], list[str]]:
    """``--trials`` emulate runs of one config, each with the host's reference around it: finished runs in
    ``--reuse`` directories first, then new ones. Returns the runs and the first line of each failure (a
    failed trial does not lose the others)."""
    done = _reused_all(config_from_dict({**emu_cfg, "engine": "emulate", "output_dir": str(out)}))
    trials = [(t, _host_reference(Path(t.run_dir), None, None)) for t in done[:TRIALS[0]]]
    for t, _ in trials:
        _note_reused(emu_cfg["name"], "emulate", Path(t.run_dir))
    failures: list[str] = []
    while len(trials) + len(failures) < TRIALS[0]:
        try:
            trials.append(emulate_at_host_speed(emu_cfg, out, fresh=True))
        except FedbwError as exc:
            print(f"  emulate failed: {exc}", flush=True)
            failures.append(str(exc).splitlines()[0])
    return trials, failures


def _transfer_key(t: dict[str, Any]) -> tuple[int, int, str, str]:
    return (t["round"], t["client"], t["stage"], t["dir"])


def repeatability(trials: list[list[dict[str, Any]]], within: float = 0.02) -> dict[str, Any] | None:
    """emulate against itself: every pair of trials, each transfer of ≥ 1 s in either against the same
    transfer (round, client, stage, direction) of the other, |later / earlier − 1|. A model gives a transfer
    one time whichever run it is held against, and one time is within ``within`` of both runs' only if they
    are within (1 + within) / (1 − within) of each other: ``model_bound`` counts, over the paired transfers
    of both runs, the most that any model could have within ``within`` (a pair further apart than that
    loses one). None with fewer than two trials."""
    if len(trials) < 2:
        return None
    ratios = []
    for i, a in enumerate(trials):
        by_key = {_transfer_key(t): t["emulate_s"] for t in a}
        for b in trials[i + 1:]:
            for t in b:
                first = by_key.get(_transfer_key(t))
                if first and max(first, t["emulate_s"]) >= 1.0:
                    ratios.append(t["emulate_s"] / first)
    diffs = [abs(r - 1) for r in ratios]
    both = (1 + within) / (1 - within)
    return {"pairs": len(diffs), "within_2pct": sum(d <= within for d in diffs),
            "median_abs_diff": statistics.median(diffs) if diffs else None, "max_abs_diff": max(diffs, default=None),
            "model_bound": sum(2 if max(r, 1 / r) <= both else 1 for r in ratios)}


def steady_rounds(rounds: list[Any]) -> list[Any]:
    """Rounds 2 and later (the first holds the start-up), or every round of a one-round run."""
    return [r for r in rounds if r.round >= 2] or rounds


def standard_error(values: list[float]) -> float | None:
    """The standard error of the mean of ``values`` (sample standard deviation ÷ √n); None below two."""
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) >= 2 else None


def emulation_row(n: int, sim: Any, emus: list[Any]) -> dict[str, Any]:
    """One client count at one dilation: every transfer of ≥ 1 s and the steady rounds, emulate (each of
    ``emus``, the trials) vs simulate, and the trials against each other."""
    vsim = {(c.round, c.client_id, s.stage): s for c in sim.clients for s in c.stages}
    per_trial = [_emulated_transfers(vsim, emu, i) for i, emu in enumerate(emus)]
    transfers = [t for ts in per_trial for t in ts]
    emu_rounds = [r for emu in emus for r in emu.rounds]
    steady_e = steady_rounds(emu_rounds)
    host = [r.host for r in emu_rounds if r.host is not None]
    e_round = statistics.mean(r.round_time_s for r in steady_e)
    return {
        "clients": n, "dilation": host[0].dilation if host else 1.0, "cpu_capped": bool(host and host[0].cpu_capped),
        "trials": len(emus), "transfers": transfers, **transfer_summary(transfers),
        "emulate_repeat": repeatability(per_trial), "emulate_round_s": e_round,
        **simulate_side(sim, e_round),
        "emulate_round_sem_s": standard_error([r.round_time_s for r in steady_e]),
        "emulate_rounds_s": [r.round_time_s for r in emu_rounds],
        "emulate_trials_round_s": [statistics.mean(r.round_time_s for r in steady_rounds(emu.rounds)) for emu in emus],
        "emulate_comm_s": statistics.mean(r.comm_time_s for r in steady_e),
        "emulate_framework_s": statistics.mean(r.framework_time_s for r in steady_e),
        "host_share": statistics.mean(h.share for h in host) if host else None,
        "host_bound_rounds": sum(h.bound for h in host),
        "cpu_busy": statistics.mean(h.cpu_busy for h in host if h.cpu_busy is not None)
        if any(h.cpu_busy is not None for h in host) else None,
        "framework_parts_s": [r.extra.get("framework_parts_s", {}) for r in emu_rounds],
    }


def transfer_summary(transfers: list[dict[str, Any]]) -> dict[str, Any]:
    """A row's transfers (emulate beside simulate) in numbers: how many, how many within 2 %, the median and
    largest |error|, and the same apart from the downloads that met the ServerApp's push."""
    errs = [abs(t["error"]) for t in transfers if t["error"] is not None]
    # apart from the downloads that met the push (None: a run that did not log the push's end)
    known = all(t["met_push"] is not None for t in transfers if t["dir"] == "down")
    clean = [abs(t["error"]) for t in transfers if t["error"] is not None and not t.get("met_push")] if known else []
    return {"transfers_ge_1s": len(errs), "transfers_within_2pct": sum(e <= 0.02 for e in errs),
            "transfer_median_abs_error": statistics.median(errs) if errs else None,
            "transfer_max_abs_error": max(errs, default=None),
            "transfers_met_push": sum(bool(t.get("met_push")) for t in transfers) if known else None,
            "transfers_apart_from_push": len(clean) if known else None,
            "within_2pct_apart_from_push": sum(e <= 0.02 for e in clean) if known else None,
            "transfer_median_abs_error_apart_from_push": statistics.median(clean) if clean else None}


def simulate_side(sim: Any, emulate_round_s: float) -> dict[str, Any]:
    """A row's model figures: simulate's steady round against emulate's, its rounds and Flower's time."""
    steady_s = steady_rounds(sim.rounds)
    s_round = statistics.mean(r.round_time_s for r in steady_s)
    return {"simulate_round_s": s_round, "round_error": emulate_round_s / s_round - 1,
            "simulate_rounds_s": [r.round_time_s for r in sim.rounds],
            "simulate_framework_s": statistics.mean(r.framework_time_s for r in steady_s)}


def remodel(path: Path, out: Path) -> dict[str, Any]:
    """An emulation result's model side again, under this fedbw's model: simulate runs again for each row's
    config (with the calibration the result names) and every transfer and round of the emulate runs the
    result kept is set beside it anew. emulate's own figures are the original run's, untouched (its run
    directories need not exist): a model change then costs a simulate run, not the emulations again. The
    transfers compared are those the original run kept (≥ 1 s in emulate or in the simulate of then)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SystemExit(f"agreement: --remodel {path}: not a readable result file ({exc})") from None
    if not isinstance(data, dict) or data.get("case") != "emulation":
        case = data.get("case") if isinstance(data, dict) else None
        raise SystemExit(f"agreement: --remodel takes an emulation result (--case emulation); {path} is {case!r}")
    where = (data.get("calibration") or {}).get("file", "catalog")
    cal = None if where == "catalog" else str(ROOT / where)
    sims: dict[int, Any] = {}
    for row in data["rows"]:
        if "transfers" not in row:  # a row whose emulate failed: nothing to set beside
            continue
        n = row["clients"]
        if n not in sims:
            cfg = {**data["config"], "name": f"emulation-{n}", "training": {"rounds": data["rounds"]},
                   "clients": {**data["config"]["clients"], "total": n, "per_round": n}}
            sims[n] = run(with_calibration(cfg, cal), "simulate", out)
        vsim = {(c.round, c.client_id, st.stage): st for c in sims[n].clients for st in c.stages}
        for t in row["transfers"]:
            v = vsim.get((t["round"], t["client"], t["stage"]))
            t["simulate_s"] = None if v is None else getattr(v, f"t_{t['dir']}_s")
            t["error"] = t["emulate_s"] / t["simulate_s"] - 1 if t["simulate_s"] else None
        row.update(transfer_summary(row["transfers"]), **simulate_side(sims[n], row["emulate_round_s"]))
    from fedbw.calibration.file import model_stamp

    previous = {"date": data.get("date"), "made_by": data.get("made_by")}
    data["remodelled"] = [*data.get("remodelled", []), {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(), "previous": previous}]
    from fedbw.calibration.file import read_calibration

    data["made_by"] = model_stamp((base_calibration() if cal is None else read_calibration(cal)).costs())
    return data


def _emulated_transfers(vsim: dict[tuple[int, int, str], Any], emu: Any, trial: int) -> list[dict[str, Any]]:
    """One emulate run's transfers of ≥ 1 s (in it or in simulate), each beside simulate's same transfer."""
    measured = messages_by_key(Path(emu.run_dir))
    transfers = []
    for c in emu.clients:
        for s in c.stages:
            v = vsim.get((c.round, c.client_id, s.stage))
            if v is None:
                continue
            m = measured.get((c.round, c.client_id, s.stage))
            for d in ("down", "up"):
                e_s, m_s = getattr(s, f"t_{d}_s"), getattr(v, f"t_{d}_s")
                if max(e_s, m_s) >= 1.0:
                    before = m.down_before_pushed_s if m is not None and d == "down" else None
                    transfers.append({"trial": trial, "round": c.round, "client": c.client_id, "stage": s.stage,
                                      "dir": d, "simulate_s": m_s, "emulate_s": e_s,
                                      "error": e_s / m_s - 1 if m_s else None, "host_s": s.t_host_s,
                                      "sender_idle_s": None if m is None else m.bulk.get(f"{d}_sender_idle_s"),
                                      # the SuperNode's poll fell inside the ServerApp's push: its download
                                      # holds Flower's pull backoff, a phase the expected model averages
                                      "down_before_pushed_s": before,
                                      "met_push": None if m is None or d != "down" else m.met_push()})
    return transfers


STUDY_FILE = ROOT / "experiments" / "privacy-overhead.toml"


def privacy(out: Path, rounds: int, dilation: str) -> dict[str, Any]:
    """Each study variant: its re-timed row on the base's own profile against emulate of the same config."""
    from fedbw.config import config_to_dict
    from fedbw.flower_protocol import FRAMEWORK_PARTS
    from fedbw.studies import load_study, run_study

    study = load_study(STUDY_FILE, [f"training.rounds={rounds}", f"output_dir={json.dumps(str(out))}"])
    # the base's own profile when the study re-times onto it, else the study's first: a row exists for it
    base_profile = study.variants[0].config.network.profile
    profile = base_profile if base_profile in study.profiles else study.profiles[0]
    k: Any = "auto" if dilation == "auto" else float(dilation)
    rows = []
    for v in study.variants:
        cfg = config_to_dict(v.config)
        emu, reference = emulate_at_host_speed({**cfg, "name": f"privacy-{v.name}", "emulate": {"dilation": k},
                                                "network": {**cfg["network"], "profile": profile, "mix": None}}, out)
        # the variant's study row, its model at the host's speed while its emulate run ran
        cal, factor = model_calibration(out, reference)
        variant = dataclasses.replace(v, config=config_from_dict(with_calibration(cfg, cal)))
        res = run_study(dataclasses.replace(study, variants=[variant], baseline=v.name))
        sim = next(r for r in res.rows if r.variant == v.name and r.profile == profile)
        steady = steady_rounds(emu.rounds)
        e_round = statistics.mean(r.round_time_s for r in steady) if steady else None
        host = [r.host for r in emu.rounds if r.host is not None]
        rows.append({"variant": v.name, "profile": profile, "host_speed": factor, "simulate_round_s": sim.round_time_s,
                     "simulate_framework_s": sim.framework_time_s, "emulate_round_s": e_round,
                     "emulate_framework_s": statistics.mean(r.framework_time_s for r in steady) if steady else None,
                     "error": (e_round / sim.round_time_s - 1) if e_round and sim.round_time_s else None,
                     "emulate_rounds": len(emu.rounds), "dilation": host[0].dilation if host else 1.0,
                     "host_share": statistics.mean(h.share for h in host) if host else None,
                     "host_bound_rounds": sum(h.bound for h in host),
                     # which of Flower's costs differ: each part, the study's and emulate's steady means
                     # every part, the server's push too (the table cuts them where emulate does)
                     "simulate_parts_s": {**dict.fromkeys(FRAMEWORK_PARTS, 0.0), **sim.framework_parts_s},
                     "emulate_parts_s": {k: statistics.mean(r.extra.get("framework_parts_s", {}).get(k, 0.0)
                                                            for r in steady) for k in FRAMEWORK_PARTS}
                     if steady else None})
    return {"rows": rows, "rounds": rounds, "study": str(STUDY_FILE.relative_to(ROOT)), "calibration": calibration_record()}


def machine() -> str:
    import os

    return f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores, Python {platform.python_version()}"


def _note_reused(name: str, engine: str, run_dir: Path) -> None:
    try:
        started = json.loads((run_dir / "environment.json").read_text())["created_utc"]
    except (OSError, ValueError, KeyError):
        started = None
    REUSED.append({"name": name, "engine": engine, "run_dir": run_dir.name, "started_utc": started})


def _reused_app(dir_name: str, engine: str, rounds: int) -> Any:
    """A finished ``simulate --app`` / ``emulate --app`` run of this benchmark in a ``--reuse`` directory
    (``app-sim-N`` / ``app-emu-N``: N clients, the fixture app, home-30) with ``rounds`` rounds."""
    from types import SimpleNamespace

    from fedbw.results.records import load_records

    for base in REUSE:
        try:
            clients, rounds_done = load_records(base / dir_name)
        except (OSError, ValueError, FedbwError):  # not there, or not finished
            continue
        if len(rounds_done) == rounds:
            _note_reused(dir_name, engine, base / dir_name)
            return SimpleNamespace(rounds=rounds_done, clients=clients, run_dir=base / dir_name)
    return None


def _reused(cfg: Any) -> Any:
    """A finished run of the same config in a ``--reuse`` directory (its records, as the run returned
    them), so that an interrupted benchmark resumes instead of measuring every case again."""
    runs = _reused_all(cfg)
    return runs[0] if runs else None


def _calibration_stamp() -> str | None:
    """``--calibration``'s creation as a run directory's stamp (YYYYMMDD-HHMMSS, UTC), or None."""
    if CALIBRATION[0] is None:
        return None
    from fedbw.calibration.file import read_calibration

    created = str(read_calibration(CALIBRATION[0]).provenance.get("created_utc", ""))
    digits = "".join(ch for ch in created if ch.isdigit())
    return f"{digits[:8]}-{digits[8:14]}" if len(digits) >= 14 else None


def _reused_all(cfg: Any) -> list[Any]:
    """Every finished run of the same config in the ``--reuse`` directories, oldest first (each directory
    once)."""
    from types import SimpleNamespace

    from fedbw.config import config_to_dict
    from fedbw.results.records import load_records

    # emulate's numbers read no deployment model (calibration, poll phase): its runs stay reusable across them
    skip = ("output_dir", "device") + (("deployment",) if cfg.engine == "emulate" else ())
    want = {k: v for k, v in config_to_dict(cfg).items() if k not in skip}
    found = []
    dirs = {p.resolve(): p for base in REUSE for p in base.glob(f"{cfg.name}-{cfg.engine}-*")}
    # a model run that started before the calibration it names was written used another file's costs
    not_before = _calibration_stamp() if cfg.engine != "emulate" else None
    for d in sorted(dirs.values(), key=lambda p: p.name[-15:]):  # the run's start, from its name
        if not_before is not None and d.name[-15:] < not_before:
            continue
        try:
            done = json.loads((d / "resolved_config.json").read_text())
            clients, rounds = load_records(d)
        except (OSError, ValueError):
            continue
        same = all(done.get(k) == v for k, v in want.items() if k in done)  # sections added since: defaults
        if same and len(rounds) == cfg.training.rounds:
            found.append(SimpleNamespace(rounds=rounds, clients=clients, run_dir=d))
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=("deployment", "emulation", "privacy", "link", "scale"), default="deployment")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--clients", default=None, help="client counts, comma-separated (deployment: 1,2; emulation: 2,4,8)")
    ap.add_argument("--dilations", default="1,auto", help="emulation: dilations to run, comma-separated (K or auto)")
    ap.add_argument("--cap-periods", default=None,
                    help="emulation: the devices' CPU caps' periods in ms, comma-separated, a row each in this order "
                         "(emulate.cap_period_ms; default: emulate's own)")
    ap.add_argument("--dilation", default="auto", help="deployment, privacy, scale: emulate's dilation (K or auto)")
    ap.add_argument("--skip-apps", action="store_true", help="deployment: skip simulate/emulate --app")
    ap.add_argument("--short-rounds", type=int, default=None,
                    help="deployment: rounds of the framework-dominated cases, fedbw's quickstart shape and the "
                         "message-API app (default: --rounds)")
    ap.add_argument("--rescale-to-host", action="store_true",
                    help="estimate and simulate get the catalog's CPU constants rescaled to the host's reference "
                         "timed around each emulate run (default: the calibration as it is; the factor is recorded)")
    ap.add_argument("--calibration", type=Path, default=None,
                    help="the calibration file estimate and simulate use (default: the catalog's); measure one with "
                         "`fedbw calibrate` right before, so that the model and emulate see the host at one speed")
    ap.add_argument("--trials", type=int, default=1,
                    help="deployment, emulation: emulate runs per case, averaged (finished ones in --reuse directories "
                         "count); emulation also compares the runs with each other, transfer by transfer")
    ap.add_argument("--scale-clients", type=int, default=16)
    ap.add_argument("--link-params", type=int, default=4_000_000, help="float32 parameters of the link check's app")
    ap.add_argument("--reuse", type=Path, action="append", default=[],
                    help="a directory of finished runs from an interrupted run of this benchmark (resumed, not rerun)")
    ap.add_argument("--out", type=Path, default=None, help="default: benchmarks/results/agreement-<case>.json")
    ap.add_argument("--remodel", type=Path, default=None, metavar="RESULT",
                    help="emulation: set the emulate runs an earlier RESULT kept beside simulate under this model "
                         "(simulate runs again, emulate does not); written back to RESULT unless --out")
    args = ap.parse_args()
    if args.remodel is not None:
        if not args.remodel.is_file():
            ap.error(f"--remodel {args.remodel}: no such result file")
        out = ROOT / "runs" / f"agreement-remodel-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
        out.mkdir(parents=True, exist_ok=True)
        data = remodel(args.remodel, out)
        target = args.out or args.remodel
        target.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {target}; `fedbw docs` regenerates docs/fidelity.md from it")
        return
    REUSE.extend(args.reuse)
    RESCALE[0] = args.rescale_to_host
    TRIALS[0] = max(1, args.trials)
    if args.calibration is not None:
        from fedbw.calibration.file import read_calibration
        from fedbw.errors import ConfigError

        try:
            read_calibration(args.calibration)
        except ConfigError as exc:
            ap.error(str(exc))
        CALIBRATION[0] = args.calibration
    report: dict[str, Any] = {"case": args.case, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "machine": machine()}
    report["rescaled_to_host_speed"] = RESCALE[0]
    from fedbw.calibration.file import model_stamp

    # the model and the calibration (before any rescale to the host) its estimate and simulate runs use
    report["made_by"] = model_stamp(base_calibration().costs())
    if REUSE:  # say so in the data: reused cases ran before this invocation's date
        report["reused_runs_from"] = [str(p) for p in REUSE]
    # the runs stay (git-ignored runs/): a later invocation resumes from them with --reuse
    out = ROOT / "runs" / f"agreement-{args.case}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    out.mkdir(parents=True, exist_ok=True)
    print(f"runs in {out} (resume an interrupted benchmark with --reuse {out})", flush=True)
    if args.case == "deployment":
        report.update(deployment(out, args.rounds, [int(c) for c in (args.clients or "1,2").split(",")],
                                 args.skip_apps, args.dilation, args.short_rounds))
    elif args.case == "emulation":
        try:
            periods = [int(p) for p in args.cap_periods.split(",")] if args.cap_periods else None
        except ValueError:
            ap.error(f"--cap-periods takes whole milliseconds, comma-separated (e.g. 100,400), got {args.cap_periods!r}")
        report.update(emulation(out, args.rounds, [int(c) for c in (args.clients or "2,4,8").split(",")],
                                args.dilations.split(","), periods))
    elif args.case == "privacy":
        report.update(privacy(out, args.rounds, args.dilation))
    elif args.case == "link":
        report["link_transfers"] = link_fidelity(args.link_params, args.rounds)
        report["link_summary"] = summarize(report["link_transfers"])
    else:
        report["scale"] = scale(out, args.scale_clients, args.dilation)
    if REUSED:  # each reused run and when it started: its numbers are older than the report's date
        report["reused"] = list(REUSED)
    path = args.out or ROOT / "benchmarks" / "results" / f"agreement-{args.case}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    from fedbw.report import doc_tables

    print(doc_tables.render_result(f"agreement-{args.case}.json", report))
    print(f"\nwrote {path}; `fedbw docs` regenerates docs/fidelity.md from it")


if __name__ == "__main__":
    main()
