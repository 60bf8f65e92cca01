"""Held-out validation of the round-time model (issue 31.5): the model and its calibration frozen first,
then a grid of configs that no calibration run and no tuning ever saw, each emulated twice (dilated) and
predicted by simulate (Flower's Simulation Engine for the bytes and the training time, the network model
and Flower's cost terms for the clock) and by estimate (the model alone).

Why its own script and a run log: a validation counts only if nothing was tuned on it and no run was
dropped. So the first line of ``benchmarks/results/validation-runs.jsonl`` freezes the model (its version,
a hash of its code) and the calibration (its fingerprint), the commit and the grid; every emulate trial
and every model run is appended as it ends, failures included; a restart resumes from the log (a trial
that finished is never run again, a failed one is retried and both stay in the log); and a model or
calibration that differs from the freeze refuses to resume (``--new`` starts another validation, the
earlier one stays in the log and in the result).

The grid (``GRID``): configs that neither a calibration nor an earlier validation ran (``GRID_1`` to
``GRID_3`` are validations 1 to 3's); a new freeze refuses a row an earlier one ran, because what an
earlier validation showed may have shaped the model since. Calibration runs one client, on unshaped
loopback and shaped home-30 links, without SecAgg+ (fedbw/calibrate/measure.py): no row shares a config
with it. Validations 1 to 3 emulated each row at its own "auto" dilation, capped at the freeze's
``max_dilation`` (3 for validations 1 and 2, none for 3: a cap left 4 and 8 devices less than a core each
when they were busy together). A new freeze runs every row at ``ONE_DILATION``, the dilation its
calibration was measured at, and refuses a calibration measured at another (emulate's rounds depend on K).
That calibration need not be the shipped one (``--calibration FILE``): the shipped one is measured where a
device comes closest to a real one (dilation 2, a core of its own), and a device capped harder pays CPU a
real one does not (docs/fidelity.md, "What the caps give").

Per row: the steady rounds (round ≥ 2) of both trials pooled against the model's rounds, each round
against the model's same round: the median |error|; whether the pooled mean falls inside the model's
central 80 % interval (and the share of single emulated rounds inside it); emulate's transfers that the
model times at ≥ 1 s against simulate's same transfer, their median |error| (and, by the rule the
validations were frozen with, the transfers either engine timed at ≥ 1 s: ``transfer_errors`` says why
that rule is biased); host-bound rounds. ``benchmarks/results/validation.json`` holds the rows, the
verdict against issue 31's targets and the whole run log.

While a freeze's grid is unfinished, no change to the model or to the frozen calibration may land: a test
(``tests/benchmarks/test_validate.py``) fails on one. ``--abandon WHY`` closes an unfinished validation on
purpose; the reason stays in the log and in docs/fidelity.md.

Usage: .venv/bin/python benchmarks/validate.py [--new [--calibration FILE]] [--only ROW,...] [--stop-after MINUTES]
       [--summarize] [--abandon WHY] [--note TEXT] [--invalid ROW TRIAL WHY]
Touch runs/validation/STOP to stop a running grid before its next trial. To stop the trial in flight, send
SIGTERM (``kill PID``): a runner started in the background by a non-interactive shell (``nohup … &`` from a
script) ignores SIGINT, as POSIX has such a shell start it, and Python then installs no Ctrl-C handler.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedbw.config import config_from_dict  # noqa: E402
from fedbw.errors import FedbwError  # noqa: E402

LOG = ROOT / "benchmarks" / "results" / "validation-runs.jsonl"
RESULT = ROOT / "benchmarks" / "results" / "validation.json"
OUT = ROOT / "runs" / "validation"
ROUNDS, TRIALS = 3, 2
#: Emulate's dilation for a new freeze: None is "auto" uncapped (⌈(clients + 2) / (cores − 0.5)⌉: every device
#: a core of its own and the server 2, in emulated time). Validations 1 and 2 capped it at 3 (8 clients at
#: auto's 7 take about 20 minutes a row on 2 cores), so their 4- and 8-client rows asked more CPU of the
#: host than it had whenever the devices were busy together; each freeze records its cap.
MAX_DILATION: int | None = None
#: One dilation for every row of a new freeze, and the dilation its calibration must have been measured at
#: (validation 4 on): a device's CPU work costs more CPU time under a tighter cap (docs/fidelity.md, "What the
#: caps give"), so emulate's rounds depend on K, and a calibration measured at one K checked against rows at
#: others mixes two references. 7 is auto's K for 8 clients on 2 cores (every device a core of its own, in
#: emulated time, at the largest cohort of the grid). None: per row, auto capped at MAX_DILATION.
ONE_DILATION: float | None = 7.0
#: Issue 31's targets: a row's median |round error|, the share of rows whose pooled rounds fall inside the
#: model's 80 % interval, the median |transfer error| in rows without a host-bound round.
TARGETS = {"round_median_abs_error": 0.05, "rows_inside_interval": 0.80, "transfer_median_abs_error": 0.03}

MODELS: dict[str, dict[str, Any]] = {
    "small-cnn": {"model": {"name": "small-cnn"}, "data": {"dataset": "digits"},
                  "clients": {"compute": "real"}, "training": {"local_epochs": 1}},
    "3M": {"model": {"name": "params=3M"}, "clients": {"compute": "synthetic", "device_profile": "desktop-gpu"}},
    "1M": {"model": {"name": "params=1M"}, "clients": {"compute": "synthetic", "device_profile": "desktop-gpu"}},
    "resnet18": {"model": {"name": "resnet18"}, "clients": {"compute": "synthetic", "device_profile": "desktop-gpu"}},
    "mlp": {"model": {"name": "mlp"}, "data": {"dataset": "digits"}, "clients": {"compute": "real"},
            "training": {"local_epochs": 1}},
    "resnet50": {"model": {"name": "resnet50"}, "clients": {"compute": "synthetic", "device_profile": "desktop-gpu"}},
}
#: Validation 1's grid (model, profile, clients, SecAgg+): a Latin square of clients over model × profile,
#: then three rows with the other privacy setting (cheapest first: an interrupted grid has its small rows).
#: Its runs informed the model change after it (the ClientApp's pull), so it is no longer held out.
GRID_1: list[tuple[str, str, int, bool]] = [
    ("small-cnn", "home-50", 2, False), ("3M", "home-80", 2, False), ("resnet18", "mobile-5g", 2, False),
    ("small-cnn", "home-80", 4, True), ("small-cnn", "home-80", 4, False), ("3M", "mobile-5g", 4, False),
    ("3M", "mobile-5g", 4, True), ("resnet18", "home-50", 4, True), ("small-cnn", "mobile-5g", 8, False),
    ("small-cnn", "mobile-5g", 8, True), ("3M", "home-50", 8, True), ("resnet18", "home-80", 8, False),
]
#: Validation 2's grid: 12 configs no calibration, tuning or earlier validation ran — four model sizes (the MLP
#: and the small CNN with real training on digits; ResNet-18 and ResNet-50, above it, with synthetic compute),
#: five link profiles (home-30, where the calibration's shaped runs had one client of ResNet-18; home-50,
#: home-80, cross-silo-1g and mobile-4g), 2, 4 and 8 clients, plain and SecAgg+; cheapest first.
GRID_2: list[tuple[str, str, int, bool]] = [
    ("small-cnn", "cross-silo-1g", 2, False), ("mlp", "home-50", 8, False), ("small-cnn", "home-30", 2, False),
    ("resnet50", "cross-silo-1g", 2, False), ("resnet18", "home-30", 2, False), ("small-cnn", "cross-silo-1g", 4, True),
    ("mlp", "cross-silo-1g", 8, True), ("mlp", "mobile-4g", 4, True), ("resnet50", "home-80", 4, False),
    ("small-cnn", "mobile-4g", 8, True), ("resnet18", "cross-silo-1g", 4, True), ("resnet18", "mobile-4g", 2, False),
]
#: Validation 3's grid: 12 configs that neither calibration nor validations 1
#: and 2 ran — four model sizes (the MLP and the small CNN with real training; the 3 M-parameter model and
#: ResNet-18 with synthetic compute), five profiles (home-30, home-50, home-80, mobile-4g, mobile-5g), 2, 4
#: and 8 clients (4, 5 and 3 rows), plain and SecAgg+ (3 rows; it needs 3 clients), emulated at auto
#: dilation, uncapped; cheapest first (about 3 hours on 2 cores: a session stops it between trials with
#: --stop-after and the next resumes it). ``current_freeze`` refuses a row an earlier freeze ran.
GRID_3: list[tuple[str, str, int, bool]] = [
    ("small-cnn", "home-80", 2, False), ("mlp", "home-30", 2, False), ("small-cnn", "mobile-4g", 4, False),
    ("3M", "mobile-4g", 2, False), ("3M", "home-30", 4, False), ("small-cnn", "home-50", 8, False),
    ("mlp", "mobile-5g", 4, True), ("resnet18", "home-50", 2, False), ("resnet18", "mobile-5g", 4, False),
    ("3M", "home-50", 4, True), ("resnet18", "home-50", 8, False), ("small-cnn", "home-30", 8, True),
]
#: Validation 4's grid: 12 configs that neither calibration nor validations 1 to 3
#: ran — four model sizes (the MLP and the small CNN with real training on digits; the 3 M-parameter model and
#: ResNet-18 with synthetic compute), five profiles (home-30, home-50, home-80, mobile-4g, mobile-5g), 2, 4 and
#: 8 clients (3, 6 and 3 rows), plain and SecAgg+ (4 rows), every row at ONE_DILATION; cheapest first. Its 3M
#: rows led to the ServerApp's pull as a hop (2026-12-07), so it is no longer held out.
GRID_4: list[tuple[str, str, int, bool]] = [
    ("small-cnn", "mobile-5g", 2, False), ("mlp", "home-80", 2, False), ("3M", "home-50", 2, False),
    ("small-cnn", "home-30", 4, False), ("mlp", "home-80", 4, True), ("small-cnn", "mobile-4g", 4, True),
    ("3M", "home-80", 4, False), ("resnet18", "home-80", 4, False), ("resnet18", "home-30", 4, True),
    ("small-cnn", "home-80", 8, False), ("3M", "mobile-5g", 8, False), ("mlp", "home-50", 8, True),
]
#: The grid a new validation freezes (validation 5): 12 configs that neither calibration nor validations 1 to 4
#: ran — six model sizes (the MLP and the small CNN with real training on digits; a 1 M- and the 3 M-parameter
#: model, each sent as 300 arrays, about 600 objects a message, and ResNet-18 and ResNet-50 with synthetic
#: compute: the change it checks is a cost per object), five profiles (home-30, home-50, home-80, mobile-4g,
#: mobile-5g), 2, 4 and 8 clients (4, 6 and 2 rows), plain and SecAgg+ (3 rows), every row at ONE_DILATION;
#: cheapest first.
GRID: list[tuple[str, str, int, bool]] = [
    ("mlp", "mobile-5g", 2, False), ("small-cnn", "home-50", 4, False), ("1M", "home-80", 2, False),
    ("3M", "home-30", 2, False), ("mlp", "home-30", 4, True), ("small-cnn", "mobile-4g", 8, False),
    ("1M", "mobile-5g", 4, False), ("3M", "mobile-4g", 4, False), ("resnet18", "mobile-4g", 4, False),
    ("3M", "home-30", 4, True), ("1M", "home-50", 8, True), ("resnet50", "home-50", 2, False),
]


def row_id(model: str, profile: str, clients: int, secagg: bool) -> str:
    return f"{model}-{profile}-{clients}{'-secagg' if secagg else ''}"


#: Every grid's rows by id: a resumed freeze finds its rows' configs here.
ROWS = {row_id(*g): g for g in GRID_1 + GRID_2 + GRID_3 + GRID_4 + GRID}


def row_config(model: str, profile: str, clients: int, secagg: bool) -> dict[str, Any]:
    base = MODELS[model]
    cfg: dict[str, Any] = {
        "name": f"val-{row_id(model, profile, clients, secagg)}", "seed": 0, **base,
        "clients": {**base["clients"], "total": clients, "per_round": clients},
        "training": {**base.get("training", {}), "rounds": ROUNDS}, "network": {"profile": profile}}
    if secagg:
        cfg["privacy"] = {"secagg": {"enabled": True}}
    return cfg


def dilation(clients: int, cap: int | None = MAX_DILATION, one: float | None = None) -> float:
    """The dilation of a row's emulate trials: ``one`` for every row when the freeze set it, else emulate's own
    "auto" for this host's cores, at most ``cap``."""
    import os

    if one is not None:
        return float(one)

    from fedbw.engines.emulate.federation import auto_dilation

    k = auto_dilation(clients, len(os.sched_getaffinity(0)))
    return float(k if cap is None else min(cap, k))


# ---------------------------------------------------------------------------------------------- run log

def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_log() -> list[dict[str, Any]]:
    if not LOG.is_file():
        return []
    return [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines() if line.strip()]


def append(entry: dict[str, Any]) -> None:
    LOG.parent.mkdir(parents=True, exist_ok=True)
    with LOG.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")
        fh.flush()


def head_commit() -> str:
    """The commit a run ran at: a resumed grid may run later commits of the same model and calibration
    (the freeze checks those two), and each run says which."""
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def frozen_now(calibration: str | None = None) -> dict[str, Any]:
    """What the validation freezes: the model's version, the calibration (``calibration``: a file's path in
    the repository; None: the shipped one) and the commit."""
    from fedbw.calibration.file import default_calibration, read_calibration
    from fedbw.netmodel.version import model_version

    cal = default_calibration() if calibration is None else read_calibration(ROOT / calibration)
    commit = head_commit()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    measured_at = cal.provenance.get("dilation")
    return {"model_version": model_version(), "calibration": cal.fingerprint, "calibration_path": calibration,
            "calibration_file": cal.source if calibration is None else calibration,
            "calibration_created_utc": cal.provenance.get("created_utc"), "calibration_cpu": cal.cpu,
            "commit": commit, "dirty": bool(dirty),
            "calibration_dilation": None if measured_at is None else float(measured_at)}


def current_freeze(log: list[dict[str, Any]], new: bool, calibration: str | None = None) -> dict[str, Any]:
    """The freeze this run continues (the log's last), or a new one with ``new`` or an empty log, of
    ``calibration`` (a file in the repository; None: the shipped one); exits with one line when the model or
    the calibration moved since the freeze."""
    freezes = [e for e in log if e["kind"] == "freeze"]
    if freezes and not new:
        last = freezes[-1]
        if calibration is not None and calibration != last.get("calibration_path"):
            sys.exit(f"validate: validation {last['id']} froze the calibration {last['calibration_file']}; it resumes "
                     "with it (leave --calibration out), or --new starts another validation")
        if last.get("cpu") is not None and last["cpu"] != cpu():
            sys.exit(f"validate: validation {last['id']} was frozen on a {last['cpu']} and this host is a {cpu()}: its "
                     "calibration's CPU costs are another machine's, so its remaining rows would test the host, not "
                     "the model. Resume it on a host of that CPU, or close it with --abandon WHY and freeze anew with a "
                     "calibration measured here.")
        state = frozen_now(last.get("calibration_path"))
        moved = [k for k in ("model_version", "calibration") if last[k] != state[k]]
        if moved:
            sys.exit(f"validate: the {' and the '.join(moved)} changed since the freeze of {last['created_utc']} "
                     f"({', '.join(f'{last[k]} → {state[k]}' for k in moved)}); a validation runs one frozen model. "
                     "Start another with --new (the earlier runs stay in the log).")
        return last
    state = frozen_now(calibration)
    if state["dirty"]:
        sys.exit("validate: commit first: a freeze names the commit whose model it validates")
    measured_at = state.pop("calibration_dilation", None)
    if state.get("calibration_cpu") not in (None, cpu()):
        sys.exit(f"validate: the calibration {state['calibration_file']} was measured on a {state['calibration_cpu']} "
                 f"and this host is a {cpu()}: a validation of the model needs the CPU costs of the host it emulates "
                 f"on. Measure one here first (fedbw calibrate --dilation {ONE_DILATION or 'auto'} --out FILE) and freeze it "
                 "with --new --calibration FILE")
    if ONE_DILATION is not None and measured_at != ONE_DILATION:
        sys.exit(f"validate: the calibration {state['calibration_file']} was measured at dilation {measured_at}, and "
                 f"this freeze runs every row at {ONE_DILATION:g}; measure one there first (fedbw calibrate "
                 f"--dilation {ONE_DILATION:g} --out benchmarks/results/calibration-dilation{ONE_DILATION:g}.toml) "
                 "and freeze it with --new --calibration FILE")
    seen = sorted({rid for f in freezes for rid in f["grid"]} & {row_id(*g) for g in GRID})
    if seen:
        sys.exit(f"validate: {', '.join(seen)} ran in an earlier validation, whose results may have informed the "
                 "model since: not held out. Give GRID new configs.")
    freeze = {"kind": "freeze", "id": len(freezes) + 1, "created_utc": now(), **state, "rounds": ROUNDS,
              "trials": TRIALS, "max_dilation": MAX_DILATION, "dilation": ONE_DILATION, "machine": machine(),
              "cpu": cpu(), "grid": [row_id(*g) for g in GRID]}
    append(freeze)
    return freeze


def machine() -> str:
    import os

    return f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores, Python {platform.python_version()}"


def cpu() -> str:
    """The CPU's model: a freeze records it, and a grid resumes only on the same kind of CPU (the shared VM came
    back on an AMD EPYC on 2026-12-07 where every calibration and validation before had an Intel Xeon)."""
    from fedbw.collectives.machine import cpu_model

    return cpu_model()


# ---------------------------------------------------------------------------------------------- runs

def run_engine(cfg: dict[str, Any], engine: str) -> Any:
    from fedbw.runner import run_experiment

    return run_experiment(config_from_dict({**cfg, "engine": engine, "output_dir": str(OUT)}))


def rounds_of(result: Any) -> list[dict[str, Any]]:
    return [{"round": r.round, "round_time_s": r.round_time_s, "comm_time_s": r.comm_time_s,
             "framework_time_s": r.framework_time_s, "interval_s": r.round_interval_s,
             "median_s": r.round_median_s, "host_bound": r.host_bound,
             "host_share": None if r.host is None else r.host.share,
             "host_cpu_busy": None if r.host is None else r.host.cpu_busy,
             "device_bound_s": None if r.host is None else r.host.device_bound_s,
             "server_bound_s": None if r.host is None else r.host.server_bound_s,
             "host_cpu_saturated": None if r.host is None else r.host.cpu_saturated,
             "parts": r.extra.get("framework_parts_s")} for r in result.rounds]


def transfers_of(result: Any) -> list[dict[str, Any]]:
    return [{"round": c.round, "client": c.client_id, "stage": s.stage, "down_s": s.t_down_s, "up_s": s.t_up_s}
            for c in result.clients for s in c.stages]


def add_message_details(transfers: list[dict[str, Any]], run_dir: Path) -> bool:
    """Each transfer's payload time on the link (its bulk, without the requests around it) and whether its
    download met the ServerApp's push, from the run's emulate.json: what tells a stretched transfer's cause
    apart. False (and ``transfers`` as it was) when the run directory is gone."""
    from fedbw.engines.emulate.run import messages_by_key

    measured = messages_by_key(run_dir)
    if not measured:
        return False
    for t in transfers:
        m = measured.get((t["round"], t["client"], t["stage"]))
        if m is not None:
            t.update(down_payload_s=m.bulk.get("down_s"), up_payload_s=m.bulk.get("up_s"),
                     down_met_push=m.met_push())
    return True


def lost_replies(run_dir: Path) -> list[str]:
    """The messages of a finished emulate run that Flower answered with an error instead of a reply ("round
    r, client c, stage: why"). No validation row plans a dropout, so each one is a client the trial lost:
    on 2026-12-06 every SecAgg+ upload of ResNet-18 on home-30 at K = 7 was lost this way, most likely to
    Flower's object-push session (180 s on the SuperLink's clock, then not dilated), and the trial passed as
    ok."""
    from fedbw.engines.emulate.run import messages_by_key

    return [f"round {m.round}, client {m.client_id}, {m.stage}: {m.error.splitlines()[0]}"
            for m in messages_by_key(run_dir).values() if m.error]


def emulate_trial(freeze: dict[str, Any], rid: str, trial: int, cfg: dict[str, Any]) -> None:
    from fedbw.engines.app_start import host_reference_s

    k = dilation(cfg["clients"]["total"], freeze.get("max_dilation", 3), freeze.get("dilation"))
    entry: dict[str, Any] = {"kind": "trial", "freeze": freeze["id"], "row": rid, "trial": trial, "dilation": k,
                             "commit": head_commit(), "started_utc": now(),
                             "host_reference_before_s": host_reference_s()}
    t0 = time.perf_counter()
    try:
        res = run_engine({**cfg, "emulate": {"dilation": k}}, "emulate")
    except KeyboardInterrupt:  # stopped by hand: the log says so, and a resume runs the trial again
        entry.update(status="interrupted", error="KeyboardInterrupt", wall_s=time.perf_counter() - t0,
                     finished_utc=now())
        append(entry)
        raise
    except FedbwError as exc:
        entry.update(status="failed", error=str(exc).splitlines()[0], wall_s=time.perf_counter() - t0)
    else:
        transfers = transfers_of(res)
        add_message_details(transfers, Path(res.run_dir))
        lost = lost_replies(Path(res.run_dir))
        # a reply Flower lost (its client counted as dropped) means the trial did not measure the row's config:
        # failed, with its rounds kept for the record, and a resume runs it again
        entry.update(status="failed" if lost else "ok", run_dir=str(Path(res.run_dir).relative_to(ROOT)),
                     wall_s=time.perf_counter() - t0, rounds=rounds_of(res), transfers=transfers)
        if lost:
            entry.update(error=f"{len(lost)} replies lost; first: {lost[0]}", lost_replies=lost)
    entry.update(finished_utc=now(), host_reference_after_s=host_reference_s())
    append(entry)
    print(f"  {rid} trial {trial}: {entry['status']} in {entry['wall_s']:.0f} s", flush=True)


def model_runs(freeze: dict[str, Any], rid: str, cfg: dict[str, Any]) -> None:
    entry: dict[str, Any] = {"kind": "model", "freeze": freeze["id"], "row": rid, "commit": head_commit(),
                             "started_utc": now()}
    if freeze.get("calibration_path"):  # the frozen calibration, not the shipped one
        cfg = {**cfg, "deployment": {"calibration": str(ROOT / freeze["calibration_path"])}}
    try:
        sim, est = run_engine(cfg, "simulate"), run_engine(cfg, "estimate")
    except FedbwError as exc:
        entry.update(status="failed", error=str(exc).splitlines()[0])
    else:
        entry.update(status="ok", simulate_run_dir=str(Path(sim.run_dir).relative_to(ROOT)),
                     simulate={"rounds": rounds_of(sim), "transfers": transfers_of(sim)},
                     estimate={"rounds": rounds_of(est)})
    entry["finished_utc"] = now()
    append(entry)
    print(f"  {rid} model: {entry['status']}", flush=True)


#: Touch this file to stop a running grid before its next trial (Ctrl-C or SIGTERM stops the trial in flight,
#: which then runs again; a background runner of a non-interactive shell ignores SIGINT: see the usage above).
STOP_FILE = ROOT / "runs" / "validation" / "STOP"


def run_grid(freeze: dict[str, Any], only: set[str] | None, stop_after_s: float | None = None) -> bool:
    """Run every row's missing trials and model runs; False when ``stop_after_s`` passed first (no trial
    starts after it: the grid stops between trials, and a later run resumes it)."""
    t0 = time.monotonic()
    for rid in freeze["grid"]:
        g = ROWS[rid]
        if only and rid not in only:
            continue
        cfg = row_config(*g)
        for trial in range(TRIALS):
            if not any(e["trial"] == trial for e in ok_runs(read_log(), freeze["id"], rid, "trial")):
                if stop_after_s is not None and time.monotonic() - t0 > stop_after_s:
                    print(f"validate: stopped before {rid} trial {trial} (--stop-after); run again to resume",
                          flush=True)
                    return False
                if STOP_FILE.is_file():  # asked to stop between trials: nothing in flight is lost
                    STOP_FILE.unlink()
                    print(f"validate: stopped before {rid} trial {trial} ({STOP_FILE.name} was there); run again to "
                          "resume", flush=True)
                    return False
                emulate_trial(freeze, rid, trial, cfg)
        if not ok_runs(read_log(), freeze["id"], rid, "model"):
            model_runs(freeze, rid, cfg)
    return True


def ok_runs(log: list[dict[str, Any]], freeze_id: int, rid: str, kind: str) -> list[dict[str, Any]]:
    """A row's runs of ``kind`` ("trial" or "model") under freeze ``freeze_id`` that ended ok, in log order,
    less the trials a later entry found invalid (:func:`invalidate`)."""
    invalid = {e["run_dir"] for e in log if e["kind"] == "invalid"}
    return [e for e in log if e["kind"] == kind and e["freeze"] == freeze_id and e["row"] == rid
            and e["status"] == "ok" and e.get("run_dir") not in invalid]


def invalidate(log: list[dict[str, Any]], rid: str, trial: int, why: str) -> dict[str, Any]:
    """Mark a trial logged ok as invalid, on evidence only: its run directory must show replies Flower lost
    (:func:`lost_replies`; trials logged before that check existed passed without it). The trial stays in
    the log and the tables' run log, the entry names what was lost, and a resume runs the trial again (a
    finished grid is open again until it has). A trial whose rounds merely look wrong cannot be
    invalidated: that is what a validation is for."""
    freeze = last_freeze(log)
    if freeze is None:
        sys.exit("validate: the last validation was abandoned (or none exists): nothing to invalidate")
    mine = [e for e in ok_runs(log, freeze["id"], rid, "trial") if e["trial"] == trial]
    if not mine:
        sys.exit(f"validate: validation {freeze['id']} has no valid ok trial {trial} of row {rid!r}")
    if not why.strip():
        sys.exit("validate: --invalid needs the reason, in words (it goes into the log and docs/fidelity.md)")
    lost = lost_replies(ROOT / mine[0]["run_dir"])
    if not lost:
        sys.exit(f"validate: {mine[0]['run_dir']}: no lost reply in its run directory (or the directory is gone); "
                 "only a trial that lost replies can be invalidated")
    entry = {"kind": "invalid", "freeze": freeze["id"], "row": rid, "trial": trial, "utc": now(),
             "run_dir": mine[0]["run_dir"], "lost_replies": lost, "text": why.strip()}
    append(entry)
    return entry


def row_done(log: list[dict[str, Any]], freeze: dict[str, Any], rid: str) -> bool:
    """Whether a row of ``freeze`` has all its emulate trials and its model runs, each ok."""
    trials = {e["trial"] for e in ok_runs(log, freeze["id"], rid, "trial")}
    return len(trials) >= freeze["trials"] and bool(ok_runs(log, freeze["id"], rid, "model"))


def open_freeze(log: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last freeze while its grid is unfinished and not abandoned, else None.

    Why: a validation takes about ten hours over several sessions, and it checks one model; a change to the
    model landed meanwhile would leave a grid that no model as a whole was checked on (a resume refuses it,
    but only when someone resumes). So ``tests/benchmarks/test_validate.py`` fails while a freeze is open and
    the model or its calibration moved; ``--abandon WHY`` closes a freeze on purpose, and says so in the log
    and in docs/fidelity.md."""
    last = last_freeze(log)
    return None if last is None or all(row_done(log, last, rid) for rid in last["grid"]) else last


def last_freeze(log: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last freeze, finished or not, unless it was abandoned (then None, as with no freeze at all)."""
    freezes = [e for e in log if e["kind"] == "freeze"]
    if not freezes:
        return None
    last = freezes[-1]
    abandoned = any(e["kind"] == "note" and e.get("abandoned") and e.get("freeze") == last["id"] for e in log)
    return None if abandoned else last


def abandon(log: list[dict[str, Any]], why: str) -> dict[str, Any]:
    """Close the open freeze unfinished, with the reason in the log (a note the validation table prints)."""
    freeze = open_freeze(log)
    if freeze is None:
        sys.exit("validate: no validation is open (the last one finished or was abandoned): nothing to abandon")
    if not why.strip():
        sys.exit("validate: --abandon needs the reason, in words (it goes into the log and docs/fidelity.md)")
    done = sum(row_done(log, freeze, rid) for rid in freeze["grid"])
    entry = {"kind": "note", "freeze": freeze["id"], "utc": now(), "abandoned": True,
             "text": f"abandoned with {done} of {len(freeze['grid'])} rows done: {why.strip()}"}
    append(entry)
    return entry


def note(log: list[dict[str, Any]], why: str) -> dict[str, Any]:
    """A note on the last validation (open or finished, not abandoned): what a reader of the run log must
    know about a run that the entries cannot say (a run stopped by hand, a fault found and fixed), kept in
    the log and printed under the validation table."""
    freeze = last_freeze(log)
    if freeze is None:
        sys.exit("validate: no validation to note on (none exists, or the last one was abandoned)")
    if not why.strip():
        sys.exit("validate: --note needs the text, in words (it goes into the log and docs/fidelity.md)")
    entry = {"kind": "note", "freeze": freeze["id"], "utc": now(), "text": why.strip()}
    append(entry)
    return entry


# ---------------------------------------------------------------------------------------------- result

def steady(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rounds if r["round"] >= 2] or rounds


#: A transfer is long enough to test the link model when the model times it at this or more (seconds).
LONG_TRANSFER_S = 1.0


def transfer_errors(trials: list[dict[str, Any]], modelled: list[dict[str, Any]]
                    ) -> tuple[list[float], list[float], list[dict[str, Any]]]:
    """|emulate / simulate − 1| of each transfer in ``trials`` against simulate's same transfer: those the
    model times at ≥ 1 s, and those either engine timed at ≥ 1 s; and the stretched ones (≥ 1 s in emulate,
    shorter in the model: what only the second rule lets in), for :func:`stretched_summary`.

    Why the model's time chooses: a transfer chosen by its measured time is chosen by its error. Choosing
    by either engine's time (validations 1 to 4 were frozen with that rule) lets a 0.5 s download that
    emulate once stretched to 1.2 s into the ≥ 1 s set, and never the same download at its usual time: the
    set holds the emulated runs that went long, and the error is inflated by construction (validation 4's
    first five rows: small-model downloads of 0.9–1.3 s against the model's 0.1–0.5 s). The model's time
    is known before the run, so it chooses without looking at the outcome. Both are reported."""
    vsim = {(t["round"], t["client"], t["stage"]): t for t in modelled}
    chosen: list[float] = []
    either: list[float] = []
    stretched: list[dict[str, Any]] = []
    for t in trials:
        for x in t["transfers"]:
            m = vsim.get((x["round"], x["client"], x["stage"]))
            for d in ("down", "up") if m else ():
                emulated, model_s = x[f"{d}_s"], m[f"{d}_s"]
                if model_s <= 0:
                    continue
                error = abs(emulated / model_s - 1)
                if model_s >= LONG_TRANSFER_S:
                    chosen.append(error)
                if max(emulated, model_s) >= LONG_TRANSFER_S:
                    either.append(error)
                    if model_s < LONG_TRANSFER_S:
                        stretched.append({"dir": d, "emulate_s": emulated, "model_s": model_s,
                                          "known": f"{d}_payload_s" in x, "payload_s": x.get(f"{d}_payload_s"),
                                          "met_push": x.get("down_met_push") if d == "down" else None})
    return chosen, either, stretched


def stretched_summary(stretched: list[dict[str, Any]]) -> dict[str, Any]:
    """The transfers only the frozen rule counts (emulate ≥ 1 s, the model shorter): how many, their times in
    emulate and in the model, how long their payload took on the link, and how many downloads met the
    ServerApp's push (of those whose run directory was there to say)."""
    known = [t for t in stretched if t["known"]]
    payload = [t["payload_s"] for t in known if t["payload_s"] is not None]
    return {"count": len(stretched), "downloads": sum(t["dir"] == "down" for t in stretched),
            "emulate_median_s": statistics.median(t["emulate_s"] for t in stretched) if stretched else None,
            "model_median_s": statistics.median(t["model_s"] for t in stretched) if stretched else None,
            "with_details": len(known),
            "payload_median_s": statistics.median(payload) if payload else None,
            "met_push": sum(bool(t["met_push"]) for t in known)}


def row_result(rid: str, trials: list[dict[str, Any]], model: dict[str, Any]) -> dict[str, Any]:
    """One row: emulate's steady rounds pooled against simulate's, and its transfers against simulate's."""
    sim = {r["round"]: r for r in model["simulate"]["rounds"]}
    est = {r["round"]: r for r in model["estimate"]["rounds"]}
    pooled = [r for t in trials for r in steady(t["rounds"])]
    errors = [r["round_time_s"] / sim[r["round"]]["round_time_s"] - 1 for r in pooled if r["round"] in sim]
    est_errors = [r["round_time_s"] / est[r["round"]]["round_time_s"] - 1 for r in pooled if r["round"] in est]
    model_steady = steady(model["simulate"]["rounds"])
    lows = [r["interval_s"][0] for r in model_steady if r["interval_s"]]
    highs = [r["interval_s"][1] for r in model_steady if r["interval_s"]]
    low, high = (statistics.mean(lows), statistics.mean(highs)) if lows else (None, None)
    mean_e = statistics.mean(r["round_time_s"] for r in pooled)
    inside = None if low is None else low <= mean_e <= high
    singles = None if low is None else sum(low <= r["round_time_s"] <= high for r in pooled) / len(pooled)
    transfers, either, stretched = transfer_errors(trials, model["simulate"]["transfers"])
    host_bound = sum(bool(r["host_bound"]) for t in trials for r in t["rounds"])
    refs = [t[k] for t in trials for k in ("host_reference_before_s", "host_reference_after_s") if t.get(k)]
    return {
        "row": rid, "trials": len(trials), "dilation": trials[0]["dilation"],
        "emulate_steady_rounds_s": [r["round_time_s"] for r in pooled], "emulate_mean_s": mean_e,
        "simulate_steady_mean_s": statistics.mean(r["round_time_s"] for r in model_steady),
        "simulate_interval_s": None if low is None else [low, high],
        "estimate_steady_mean_s": statistics.mean(r["round_time_s"] for r in steady(model["estimate"]["rounds"])),
        "round_median_abs_error": statistics.median(abs(e) for e in errors) if errors else None,
        "round_median_error": statistics.median(errors) if errors else None,
        # the pooled mean against the model's mean: where emulate's rounds jump between poll steps (6 s, 9 s)
        # a single round cannot be near a mean, so this is the error of the expected round
        "mean_error": mean_e / statistics.mean(r["round_time_s"] for r in model_steady) - 1,
        "estimate_round_median_error": statistics.median(est_errors) if est_errors else None,
        "pooled_inside_interval": inside, "single_rounds_inside_interval": singles,
        "transfers_ge_1s": len(transfers),
        "transfer_median_abs_error": statistics.median(transfers) if transfers else None,
        # the rule as validations 1 to 4 were frozen with: either engine's time ≥ 1 s (biased, see above)
        "transfers_either_ge_1s": len(either),
        "transfer_median_abs_error_either_ge_1s": statistics.median(either) if either else None,
        "stretched_transfers": stretched_summary(stretched),
        "host_bound_rounds": host_bound, "rounds": sum(len(t["rounds"]) for t in trials),
        # where a round's time went, steady means: the gap between the engines is in one of these
        **{f"{engine}_{part}_s": statistics.mean(r[f"{part}_time_s"] for r in rounds)
           for engine, rounds in (("emulate", pooled), ("simulate", model_steady)) for part in ("comm", "framework")},
        "emulate_parts_s": steady_parts(pooled), "simulate_parts_s": steady_parts(model_steady),
        # the host's reference (a fresh ClientApp load) around the trials: its speed while they ran
        "host_reference_s": statistics.mean(refs) if refs else None,
        # how busy the host's CPUs were in emulate's steady rounds (None: not recorded)
        "host_cpu_busy": statistics.mean(busy) if (busy := [r["host_cpu_busy"] for r in pooled
                                                            if r.get("host_cpu_busy") is not None]) else None,
        # ... and the share of them with every core busy, the most the host can have starved (trials since
        # 2026-12-07; None before)
        "host_cpu_saturated": statistics.mean(full) if (full := [r["host_cpu_saturated"] for r in pooled
                                                                 if r.get("host_cpu_saturated") is not None]) else None,
    }


def _rounds_from_run(run_dir: Path) -> dict[int, dict[str, Any]] | None:
    """Each round's framework parts and host CPU share from a run directory's records (None: the directory
    is gone)."""
    from fedbw.results.records import load_records

    try:
        _, rounds = load_records(run_dir)
    except (OSError, FedbwError):
        return None
    return {r.round: {"parts": dict(r.extra.get("framework_parts_s", {})),
                      "host_cpu_busy": None if r.host is None else r.host.cpu_busy} for r in rounds}


def backfill_transfer_details(log: list[dict[str, Any]]) -> None:
    """Trials logged before the log kept each transfer's payload time and push: read them from their run
    directories while those exist here (then they are in the result; the log is left as written)."""
    for e in log:
        if e["kind"] == "trial" and e.get("status") == "ok" and e.get("run_dir") and not any(
                "down_payload_s" in t for t in e["transfers"]):
            add_message_details(e["transfers"], ROOT / e["run_dir"])


def backfill_parts(log: list[dict[str, Any]]) -> None:
    """Runs logged before the log kept each round's framework parts and the host's CPU share: read them
    from their run directories while those exist here (they are then in the result; the log is left as
    written)."""
    for e in log:
        if e.get("status") != "ok" or e["kind"] not in ("trial", "model"):
            continue
        rounds = e["rounds"] if e["kind"] == "trial" else e["simulate"]["rounds"]
        if all(r.get("parts") is not None and "host_cpu_busy" in r for r in rounds):
            continue
        if e["kind"] == "trial":
            run_dir = ROOT / e["run_dir"]
        elif e.get("simulate_run_dir"):
            run_dir = ROOT / e["simulate_run_dir"]
        else:  # the model's simulate run, by its name: the latest that finished before the entry did
            found = sorted((OUT).glob(f"val-{e['row']}-simulate-*"))
            if not found:
                continue
            run_dir = found[-1]
        read = _rounds_from_run(run_dir)
        for r in rounds if read else ():
            got = read.get(r["round"], {})
            if r.get("parts") is None:
                r["parts"] = got.get("parts")
            r.setdefault("host_cpu_busy", got.get("host_cpu_busy"))


def steady_parts(rounds: list[dict[str, Any]]) -> dict[str, float] | None:
    """Mean framework parts of steady rounds (a part a round lacks counts 0), None when any is unknown."""
    if not rounds or any(r.get("parts") is None for r in rounds):
        return None
    keys = sorted({k for r in rounds for k in r["parts"]})
    return {k: statistics.mean(r["parts"].get(k, 0.0) for r in rounds) for k in keys}


def summarize(log: list[dict[str, Any]]) -> dict[str, Any]:
    """Every freeze's rows, the verdict of the last, and the whole log (trials without their rounds'
    details, which the rows hold)."""
    backfill_parts(log)
    backfill_transfer_details(log)
    freezes = [e for e in log if e["kind"] == "freeze"]
    validations = []
    for f in freezes:
        rows = []
        for rid in f["grid"]:
            trials, models = ok_runs(log, f["id"], rid, "trial")[:f["trials"]], ok_runs(log, f["id"], rid, "model")
            if len(trials) == f["trials"] and models:
                rows.append(row_result(rid, trials, models[0]))
        reference = _calibration_reference(f["calibration"], f.get("calibration_path"))
        validations.append({"freeze": {k: v for k, v in f.items() if k != "kind"},
                            "calibration_host_reference_s": reference,
                            "made_by": {"model_version": f["model_version"], "calibration": f["calibration"]},
                            "rows": rows,
                            "rows_planned": len(f["grid"]), "verdict": verdict(rows)})
    runs = [{k: v for k, v in e.items() if k not in ("rounds", "transfers", "simulate", "estimate")} for e in log
            if e["kind"] != "freeze"]
    return {"benchmark": "validate", "date": now(), "machine": machine(), "targets": TARGETS,
            "made_by": validations[-1]["made_by"] if validations else None,
            "validations": validations, "run_log": runs}


def _calibration_reference(fingerprint: str, path: str | None = None) -> float | None:
    """The frozen calibration's host reference: the file the freeze names (``path``, in the repository), else
    the shipped one; only while its fingerprint is still the frozen one."""
    from fedbw.calibration.file import HOST_REFERENCE, default_calibration, read_calibration

    try:
        cal = read_calibration(ROOT / path) if path else default_calibration()
    except (OSError, FedbwError):  # the file is gone or of another form: no reference to show
        return None
    return cal.provenance.get(HOST_REFERENCE) if cal.fingerprint == fingerprint else None


def verdict(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"rows": 0}
    errs = [r["round_median_abs_error"] for r in rows if r["round_median_abs_error"] is not None]
    inside = [r["pooled_inside_interval"] for r in rows if r["pooled_inside_interval"] is not None]
    clean, within = _transfers_within(rows, "transfer_median_abs_error")
    clean_either, within_either = _transfers_within(rows, "transfer_median_abs_error_either_ge_1s")
    means = [abs(r["mean_error"]) for r in rows if r.get("mean_error") is not None]
    return {"rows": len(rows),
            "rows_round_within_target": sum(e <= TARGETS["round_median_abs_error"] for e in errs),
            "rows_mean_within_target": sum(e <= TARGETS["round_median_abs_error"] for e in means),
            "median_of_row_mean_errors": statistics.median(means) if means else None,
            "median_of_row_round_errors": statistics.median(errs) if errs else None,
            "rows_inside_interval": sum(inside), "share_inside_interval": sum(inside) / len(inside) if inside else None,
            "rows_without_host_bound": clean, "rows_transfers_within_target": within,
            # the same under the rule the validations were frozen with (either engine's time ≥ 1 s)
            "rows_without_host_bound_either_ge_1s": clean_either,
            "rows_transfers_within_target_either_ge_1s": within_either}


def _transfers_within(rows: list[dict[str, Any]], key: str) -> tuple[int, int]:
    """Rows without a host-bound round that have a transfer error under ``key``, and how many of them are
    within the target."""
    errors = [r[key] for r in rows if r["host_bound_rounds"] == 0 and r.get(key) is not None]
    return len(errors), sum(e <= TARGETS["transfer_median_abs_error"] for e in errors)


STABILITY = ROOT / "benchmarks" / "results" / "validation-stability.json"


def stability_file(against: Path | None) -> Path:
    """Where a stability check goes: the shipped calibration's in ``STABILITY``, one against another file in
    its own (named after that file), so that a check at one dilation does not replace the one at another."""
    return STABILITY if against is None else STABILITY.with_name(f"validation-stability-{against.stem}.json")


def stability(other: Path, base: Path | None = None) -> dict[str, Any]:
    """Issue 31.6: the grid's steady rounds as estimate predicts them with ``base`` (None: the shipped
    calibration; validation 4's is a file measured at its dilation) and with ``other`` (another calibration
    of this machine, measured hours apart), side by side: how much of a prediction is the hour the constants
    were measured at. estimate only: the two differ in Flower's costs (and in SecAgg+'s crypto, milliseconds
    a round, where one was timed again with ``--measure-secagg``), the bytes and the compute being the
    model's in both."""
    from fedbw.calibration.file import default_calibration, read_calibration
    from fedbw.engines.estimate import run_estimate
    from fedbw.plan import build_plan

    base_cal = default_calibration() if base is None else read_calibration(base)
    alt = read_calibration(other)
    with tempfile.TemporaryDirectory(prefix="fedbw-stability-") as tmp:
        rescaled = _at_base_host_speed(alt, base_cal, Path(tmp))
        rows = []
        for g in GRID:
            cfg = row_config(*g)
            means = []
            for cal in [None if base is None else str(base), str(other)] + ([rescaled[0]] if rescaled else []):
                c = config_from_dict({**cfg, "engine": "estimate", "deployment": {"calibration": cal}})
                res = run_estimate(build_plan(c), "stability")
                means.append(statistics.mean(r.round_time_s for r in res.rounds if r.round >= 2))
            row = {"row": row_id(*g), "shipped_s": means[0], "other_s": means[1], "diff": means[1] / means[0] - 1}
            if len(means) == 3:
                row.update(other_at_base_speed_s=means[2], diff_at_base_speed=means[2] / means[0] - 1)
            rows.append(row)
    return {"date": now(), "machine": machine(),
            "shipped": {"fingerprint": base_cal.fingerprint, "created_utc": base_cal.provenance.get("created_utc"),
                        "file": None if base is None else str(base),
                        "measured_by": base_cal.provenance.get("measured_by") or base_cal.provenance.get("command"),
                        "dilation": base_cal.provenance.get("dilation")},
            "other": {"file": str(other), "fingerprint": alt.fingerprint,
                      "created_utc": alt.provenance.get("created_utc"),
                      # a file measured directly names its command; one fitted again, the measuring one
                      "measured_by": alt.provenance.get("measured_by") or alt.provenance.get("command"),
                      "dilation": alt.provenance.get("dilation")},
            "rows": rows, "max_abs_diff": max(abs(r["diff"]) for r in rows),
            # a diagnosis, not the check: the other file's CPU constants at the base's host speed
            "rescaled": None if rescaled is None else rescaled[1],
            "made_by": {"model_version": frozen_now()["model_version"], "calibration": base_cal.fingerprint}}


def _at_base_host_speed(alt: Any, base: Any, tmp: Path) -> tuple[str, dict[str, float]] | None:
    """``alt`` rescaled (:func:`~fedbw.calibration.file.at_host_speed`) to the host speed ``base`` was measured
    at, written under ``tmp``, and the two references; None when either file has no reference. It asks
    whether the two hours differ by the host's speed alone (the reference, Flower's import in a fresh
    process, moving every CPU constant in proportion) or by more; the check itself stays unrescaled, since a
    prediction does not know the hour's reference."""
    from fedbw.calibration.file import HOST_REFERENCE, at_host_speed, write_calibration

    own, target = alt.provenance.get(HOST_REFERENCE), base.provenance.get(HOST_REFERENCE)
    if not isinstance(own, (int, float)) or not isinstance(target, (int, float)) or own <= 0 or target <= 0:
        return None
    path = write_calibration(tmp / "other-at-base-speed.toml", at_host_speed(alt, float(target)))
    return str(path), {"base_reference_s": float(target), "other_reference_s": float(own),
                       "factor": float(target) / float(own)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--new", action="store_true", help="start another validation (freeze the model again)")
    ap.add_argument("--calibration", default=None, metavar="FILE",
                    help="with --new: freeze this calibration (a file in the repository) instead of the shipped one")
    ap.add_argument("--only", default=None, help="rows to run, comma-separated (default: the whole grid)")
    ap.add_argument("--summarize", action="store_true", help="only write the result from the run log")
    ap.add_argument("--stop-after", type=float, default=None, metavar="MINUTES",
                    help="start no trial after this many minutes (the grid resumes where it stopped)")
    ap.add_argument("--stability", type=Path, default=None, metavar="CALIBRATION",
                    help="issue 31.6: the grid's rounds under the shipped calibration and this one, side by side "
                         "(estimate; writes benchmarks/results/validation-stability.json, or with --against "
                         "validation-stability-<its name>.json)")
    ap.add_argument("--against", type=Path, default=None, metavar="CALIBRATION",
                    help="with --stability: set it against this calibration instead of the shipped one (validation "
                         "4's, measured at its dilation)")
    ap.add_argument("--invalid", nargs=3, default=None, metavar=("ROW", "TRIAL", "WHY"),
                    help="mark a trial logged ok as invalid because Flower lost replies in it (its run directory "
                         "must show them); it stays in the log, and a resume runs it again")
    ap.add_argument("--abandon", default=None, metavar="WHY",
                    help="close the open validation unfinished, with the reason (kept in the log and the docs); "
                         "until then no change to the model may land (a test holds it)")
    ap.add_argument("--note", default=None, metavar="TEXT",
                    help="add a note on the last validation to the run log (printed under its table in the docs)")
    args = ap.parse_args()
    if args.abandon is not None or args.note is not None:
        entry = abandon(read_log(), args.abandon) if args.abandon is not None else note(read_log(), args.note)
        print(f"validation {entry['freeze']}: {entry['text']}")
        RESULT.write_text(json.dumps(summarize(read_log()), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RESULT.relative_to(ROOT)}")
        return
    if args.invalid is not None:
        rid, trial, why = args.invalid
        if not trial.isdigit():
            sys.exit(f"validate: --invalid ROW TRIAL WHY: TRIAL is a trial's number (0, 1), not {trial!r}")
        entry = invalidate(read_log(), rid, int(trial), why)
        print(f"validation {entry['freeze']}: {rid} trial {trial} invalid ({len(entry['lost_replies'])} replies lost)")
        RESULT.write_text(json.dumps(summarize(read_log()), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RESULT.relative_to(ROOT)}")
        return
    if args.against is not None and args.stability is None:
        sys.exit("validate: --against goes with --stability OTHER (it sets OTHER against this calibration)")
    if args.stability is not None:
        for path in (args.stability, args.against):
            if path is not None and not path.is_file():
                sys.exit(f"validate: {path}: no such calibration file")
        data = stability(args.stability, args.against)
        out = stability_file(args.against)
        out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"largest difference {100 * data['max_abs_diff']:.1f} %; wrote {out.relative_to(ROOT)}")
        return
    for var in ("FLWR_TELEMETRY_ENABLED", "RAY_USAGE_STATS_ENABLED"):
        import os
        os.environ[var] = "0"
    os.environ["FLWR_DISABLE_UPDATE_CHECK"] = "1"
    if not args.summarize:
        calibration = None
        if args.calibration is not None:
            path = Path(args.calibration).resolve()
            if not path.is_file() or not path.is_relative_to(ROOT):
                sys.exit(f"validate: --calibration {args.calibration}: not a file in this repository (a freeze names "
                         "it by its path here, so that a resumed grid reads the same file)")
            calibration = str(path.relative_to(ROOT))
        freeze = current_freeze(read_log(), args.new, calibration)
        print(f"validation {freeze['id']}: model {freeze['model_version']}, calibration {freeze['calibration']}, "
              f"commit {freeze['commit'][:10]}", flush=True)
        try:
            run_grid(freeze, set(args.only.split(",")) if args.only else None,
                     None if args.stop_after is None else 60 * args.stop_after)
        except KeyboardInterrupt:  # the trial in flight is logged as interrupted; what finished stays
            RESULT.write_text(json.dumps(summarize(read_log()), indent=1) + "\n", encoding="utf-8")
            sys.exit(f"validate: stopped by hand; the log keeps every run that ended (the trial in flight as "
                     f"interrupted) and {RESULT.relative_to(ROOT)} is written; run again to resume")
    RESULT.write_text(json.dumps(summarize(read_log()), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {RESULT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
