"""The ServerApp's own work, timed by the ServerApp: its push of each message and its pull of each reply,
against what the clock lays for them.

Why: the clock charges the ServerApp's push of a message per MiB alone (the local-copy term) and its pull of
a reply as a hop (per object and per MiB), and neither was ever timed: calibration fits the hop on the
SuperNodes' transfers, and the ServerApp's pull hides in its 3 s poll unless a reply holds hundreds of
objects. Validation 5's 1M and 3M rows (about 600 objects a message) and the held-back split of the hop
term by direction (docs/methodology.md) both turn on these two costs. fedbw's ServerApp now stamps each
pull's start beside its push (``fedbw.fl.measure``), so emulate measures both at the receiver.

This runs calibration's own unshaped run (one client on unshaped loopback, synthetic compute, at the dilation
and CPU caps of the calibration it compares with) for models of 4 to 300 arrays (12 to 604 objects a message), and sets
each message's push and pull (pulls that started after the reply's last byte reached the SuperLink only)
beside the clock's expressions under that calibration (``fedbw.calibrate.evaluate.serverapp_work``). The
measurements are emulate's; the "model" columns are the clock's, with the calibration named in the result.

Writes benchmarks/results/serverapp-work.json, adding each measurement beside the earlier ones (never in their
place); docs/fidelity.md's table is generated from it.

Usage: .venv/bin/python benchmarks/serverapp_work.py [--rounds 5] [--models mlp,small-cnn,resnet18,1M,3M]
       [--calibration benchmarks/results/calibration-dilation7-amd-epyc.toml]
(about 30 minutes at 4 rounds, 42 at 6, dilation 7, on 2 cores; the host should be otherwise idle: the caps measure a
device of one core only when nothing else competes for the cores), or with ``--again`` after a model change:
the kept messages set against the current model in seconds, no emulation.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
for _k, _v in (("FLWR_TELEMETRY_ENABLED", "0"), ("FLWR_DISABLE_UPDATE_CHECK", "1"), ("RAY_USAGE_STATS_ENABLED", "0")):
    os.environ.setdefault(_k, _v)

RESULTS = ROOT / "benchmarks" / "results"
OUT = RESULTS / "serverapp-work.json"
#: The calibration compared with: measured on this host's CPU (AMD EPYC) at dilation 7, validation 5's.
CALIBRATION = RESULTS / "calibration-dilation7-amd-epyc.toml"
#: Models by objects a message: 4 arrays, 8, 62, and 300 arrays twice (1 M and 3 M parameters).
MODELS = {"mlp": "mlp", "small-cnn": "small-cnn", "resnet18": "resnet18", "1M": "params=1M", "3M": "params=3M"}


#: What the result keeps of each measured message: the fields the diagnosis reads (row key → message field).
KEPT = {"round": "round", "objects_down": "objects_down", "objects_up": "objects_up",
        "flower_bytes_down": "flower_bytes_down", "flower_bytes_up": "flower_bytes_up",
        "push_s": "t_serverapp_push_s", "pushed_with": "serverapp_pushed_with", "pull_s": "t_serverapp_pull_s",
        "pulled_with": "serverapp_pulled_with", "up_s": "t_up_s"}


def message_row(m: Any) -> dict[str, Any]:
    """One measured message as the result keeps it (and whether its pull came after the upload, for a reader)."""
    from fedbw.calibrate.evaluate import pulled_after_upload

    return {**{k: getattr(m, f) for k, f in KEPT.items()}, "serverapp_poll_s": m.parts.get("serverapp_poll_s"),
            "pull_after_upload": pulled_after_upload(m)}


def message_of_row(row: dict[str, Any]) -> Any:
    """A kept row as a measured message again (the fields it did not keep at zero: the diagnosis reads none)."""
    from fedbw.results.messages import MeasuredMessage

    zero = dict.fromkeys(("bytes_down", "bytes_up", "t_down_s", "t_compute_s", "t_framework_s", "total_s"), 0.0)
    return MeasuredMessage(**zero, **{f: row[k] for k, f in KEPT.items()}, client_id=0, stage="train",
                           parts={"serverapp_poll_s": row["serverapp_poll_s"]})


def timed(data: dict[str, Any], costs: Any) -> dict[str, Any]:
    """``data`` with each measurement's runs' work, and all of them together, set against the clock under
    ``costs`` (from the messages it keeps): what a new model changes, without emulating again."""
    from fedbw.calibrate.evaluate import serverapp_work

    every = []
    for measurement in data["measurements"]:
        for run in measurement["runs"]:
            if run.get("error"):
                continue
            msgs = [message_of_row(r) for r in run["messages"]]
            run["work"] = serverapp_work(msgs, costs)
            every += msgs
    return {**data, "all": serverapp_work(every, costs)}


def _calibration(path: str, ap: argparse.ArgumentParser) -> Any:
    from fedbw.calibration.file import read_calibration
    from fedbw.errors import FedbwError

    try:
        return read_calibration(path)
    except FedbwError as exc:
        ap.error(str(exc))


def _stamp(data: dict[str, Any], cal: Any, path: str) -> dict[str, Any]:
    from fedbw.calibration.file import model_stamp

    costs = cal.costs()
    where = Path(path).resolve()
    return {**data, "made_by": model_stamp(costs), "timed_utc": _now(),
            "calibration": {"path": str(where.relative_to(ROOT)) if where.is_relative_to(ROOT) else path,
                            "fingerprint": cal.fingerprint, "cpu": cal.cpu, "hop_object_s": costs.hop_object_s,
                            "hop_s_per_mib": costs.hop_s_per_mib, "local_s_per_mib": costs.local_s_per_mib}}


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else str(path)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="rounds a model (default 5)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--calibration", default=str(CALIBRATION), help="the calibration whose dilation the runs take "
                    "and whose constants the clock's columns use (a result keeps the one it began with)")
    ap.add_argument("--again", action="store_true", help="no emulation: set the messages the result keeps against "
                    "this fedbw's model again (after a model change; seconds)")
    args = ap.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in MODELS]
    if unknown or not models:
        ap.error(f"--models: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(MODELS)}")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    from fedbw.files.atomic import write_json_atomic
    from fedbw.report.serverapp_work_table import serverapp_work_markdown

    kept: dict[str, Any] | None = None
    if OUT.is_file() or args.again:
        try:
            kept = json.loads(OUT.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            ap.error(f"{_shown(OUT)} cannot be read ({exc}): move it away to start a new result"
                     + ("; --again needs a measured one" if args.again else ""))
        if not (isinstance(kept, dict) and isinstance(kept.get("measurements"), list)
                and isinstance(kept.get("calibration"), dict) and "path" in kept["calibration"]):
            ap.error(f"{_shown(OUT)} is not a result of this benchmark (no measurements or calibration): move it "
                     "away to start a new result")
    if kept is not None and args.calibration == str(CALIBRATION):
        args.calibration = str(ROOT / kept["calibration"]["path"])  # a result keeps its calibration
    cal = _calibration(args.calibration, ap)
    if kept is not None and kept["calibration"]["fingerprint"] != cal.fingerprint and not args.again:
        ap.error(f"{_shown(OUT)} was measured against calibration {kept['calibration']['fingerprint']}, not "
                 f"{cal.fingerprint}: a measurement is added only beside its own (move the file away to start anew)")
    if kept is None:
        kept = {"benchmark": "serverapp-work", "dilation": float(cal.provenance.get("dilation", 1.0)),
                "measurements": []}
    if not args.again:  # a new measurement is added beside the earlier ones, never in their place
        kept["measurements"].append(measure(models, args.rounds, float(kept["dilation"])))
    data = _stamp(timed(kept, cal.costs()), cal, args.calibration)
    write_json_atomic(OUT, data, indent=1)
    print(serverapp_work_markdown(data))
    print(f"wrote {_shown(OUT)}")
    return 0


def measure(models: list[str], rounds: int, dilation: float) -> dict[str, Any]:
    """Calibration's unshaped run of each model at ``dilation``; the messages kept (a failed run as its error)."""
    from fedbw.calibrate.fit import UNSHAPED
    from fedbw.calibrate.measure import _emulated_messages
    from fedbw.collectives.machine import cpu_model
    from fedbw.errors import FedbwError

    started = _now()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fedbw-serverapp-work-") as tmp:
        for name in models:  # a run that fails is kept as its error, and the others still run
            try:
                got = _emulated_messages(UNSHAPED, MODELS[name], "synthetic", rounds, Path(tmp), dilation)
            except FedbwError as exc:
                runs.append({"model": name, "error": str(exc).splitlines()[0]})
                continue
            runs.append({"model": name, "messages": [message_row(m) for m in got]})
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"rounds": rounds, "started_utc": started, "ended_utc": _now(),
            "machine": f"{platform.platform()}, {os.cpu_count()} CPU(s)", "cpu": cpu_model(), "commit": commit[:10],
            "runs": runs}


if __name__ == "__main__":
    sys.exit(main())
