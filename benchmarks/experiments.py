"""Run every experiment of experiments/ with the command its docs page shows, and keep what the page shows.

    .venv/bin/python benchmarks/experiments.py [NAME ...]      # every experiment, or the ones named
    .venv/bin/python benchmarks/experiments.py --plots-only    # redraw the PNGs from the committed JSON

Each experiment runs through the CLI (`fedbw run`, `fedbw study … --result`, `fedbw estimate --json`),
on its config's default engine; its result goes to benchmarks/results/experiments/<name>.json, its
figure to docs/experiments/img/<name>.png — drawn from that JSON by
fedbw/report/experiment_plots.py — and the generated tables of docs/experiments/ are rewritten.

Extras beyond the plain command, each said on its page: local-steps adds every variant's accuracy per
round (from its run's records); compression adds `fedbw estimate --codec` for larger models;
heterogeneous-clients adds the estimate engine on the same config (stragglers are the plan's links, so the
model sees them) and without the stragglers; deadlines runs its config
once per round policy (DEADLINE_POLICIES, each a `--set` list) and seed (DEADLINE_SEEDS).

Run it from a frozen snapshot (`/tmp/snap-run.sh NAME .venv/bin/python benchmarks/experiments.py`):
Flower's processes import fedbw afresh. ≈ 15–20 min on 2 cores; run directories go to runs/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fedbw.report.doc_blocks import RESULTS  # noqa: E402
from fedbw.report.experiment_plots import FIGURES, draw  # noqa: E402
from fedbw.results.records import read_records  # noqa: E402

IMG = ROOT / "docs" / "experiments" / "img"
RUNS = ROOT / "runs"
ENV = {**os.environ, "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1", "RAY_USAGE_STATS_ENABLED": "0",
       "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
#: the accuracy local-steps counts the time to (the digits task reaches it within a few rounds)
TARGET_ACCURACY = 0.9
#: models the data-center comparison and the large-model codec table cover
DC_MODELS = ["small-cnn", "resnet18", "resnet50", "vit-b-16", "gpt2-small", "llm-7b"]
CODEC_MODELS = ["resnet18", "gpt2-small"]


def utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()[0]}


#: Ray's raylet gives up after a fixed 30 s when the machine is overloaded; such a start is retried once
RAY_START_TIMEOUT = "timed out during startup"
RETRIES: list[str] = []  #: commands retried after RAY_START_TIMEOUT, kept in the result JSON


def _ray_start_timed_out(since: float) -> bool:
    """Did a simulation log written since ``since`` (epoch seconds) end with Ray's start-up timeout?"""
    logs = [p for p in RUNS.rglob("simulation.log") if p.stat().st_mtime >= since] if RUNS.is_dir() else []
    return any(RAY_START_TIMEOUT in p.read_text(encoding="utf-8", errors="replace") for p in logs)


def fedbw(*args: str, timeout_s: float = 3600) -> str:
    """Run a fedbw command as a user would; its stdout, or SystemExit with the end of its output."""
    cmd = [sys.executable, "-m", "fedbw.cli", *args]
    for attempt in (1, 2):
        t0, started = time.perf_counter(), time.time()
        proc = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout_s)
        print(f"  {shlex.join(['fedbw', *args])}: exit {proc.returncode} in {time.perf_counter() - t0:.0f} s",
              flush=True)
        if proc.returncode == 0:
            return proc.stdout
        if attempt == 1 and _ray_start_timed_out(started):
            RETRIES.append(shlex.join(["fedbw", *args]))
            print("  Ray's node start timed out (machine overloaded); retrying once", flush=True)
            continue
        break
    raise SystemExit(f"fedbw {shlex.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                     f"{proc.stderr[-3000:]}")


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def records_of(run_dir: Path) -> dict[str, Any]:
    f = read_records(run_dir)
    return {"run": run_dir.name, "engine": f.header.get("engine"), "rounds": [r.to_json() for r in f.rounds],
            "clients": [c.to_json() for c in f.clients], "notes": f.notes}


def run(config: str, *args: str) -> dict[str, Any]:
    """`fedbw run CONFIG ARGS`: the run's records, resolved config, environment and summary."""
    before = set(RUNS.iterdir()) if RUNS.is_dir() else set()
    started = utc()
    fedbw("run", config, *args)
    new = sorted((p for p in RUNS.iterdir() if p not in before and p.is_dir()), key=lambda p: p.stat().st_mtime)
    if not new:
        raise SystemExit(f"expected a new run directory under {RUNS}, found none")
    # the last attempt's (a retried start leaves the failed one's beside it)
    return {"started_utc": started, "finished_utc": utc(), **run_dir_data(new[-1], config, *args)}


def run_dir_data(d: Path, config: str, *args: str) -> dict[str, Any]:
    """A run directory as the result JSON keeps it; a run that stopped early keeps its finished rounds and
    says why (``summary.stopped_early``)."""
    return {"command": shlex.join(["fedbw", "run", config, *args]), **records_of(d),
            "config": _json(d / "resolved_config.json"), "environment": _json(d / "environment.json"),
            "summary": _json(d / "summary.json")}


def plain_run(name: str) -> dict[str, Any]:
    return {"experiment": name, "machine": machine(), **run(f"experiments/{name}.toml")}


def study(name: str, result: str) -> dict[str, Any]:
    """`fedbw study … --result benchmarks/results/<result>`, and the study.json it copied there."""
    m = machine()
    fedbw("study", f"experiments/{name}.toml", "--result", str(RESULTS / result))
    return {**_json(ROOT / RESULTS / result), "machine": m}


def local_steps(name: str) -> dict[str, Any]:
    data = study(name, f"experiments/{name}.json")
    curves = {}
    for v in data["variants"]:
        rounds = read_records(ROOT / v["run_dir"]).rounds
        curves[v["name"]] = [{"round": r.round, "round_time_s": r.round_time_s, "accuracy": r.accuracy,
                              "loss": r.loss} for r in rounds]
    first = data["variants"][0]["run_dir"]
    mix = _json(ROOT / first / "resolved_config.json")["network"]["mix"]
    return {**data, "curves": curves, "curve_profile": "+".join(m["profile"] for m in mix),
            "target_accuracy": TARGET_ACCURACY}


def compression(name: str) -> dict[str, Any]:
    data = study(name, f"experiments/{name}.json")
    estimates = []
    for model in CODEC_MODELS:
        for v in data["variants"]:
            args = ["--model", model, "--set", 'clients.device_profile="desktop-gpu"']
            args += [a for s in v["set"] for a in ("--set", s)]
            args += [a for p in data["profiles"] for a in ("--profile", p)]
            out = json.loads(fedbw("estimate", *args, "--json"))
            estimates.append({"variant": v["name"], "command": shlex.join(["fedbw", "estimate", *args, "--json"]),
                              **out})
    return {**data, "estimates": estimates}


def datacenter(name: str) -> dict[str, Any]:
    started, m = utc(), machine()
    config = f"experiments/{name}.toml"
    models = [json.loads(fedbw("estimate", config, "--model", model, "--json")) for model in DC_MODELS]
    from fedbw.config import load_config
    from fedbw.results.rundir import environment

    cfg = load_config(ROOT / config)
    return {"experiment": name, "command": f"fedbw estimate {config} --model M --json (M = {', '.join(DC_MODELS)})",
            "started_utc": started, "machine": m, "environment": environment(),
            "device_profile": cfg.clients.device_profile, "models": models}


#: --run-dir: take the emulated run from this finished (or stopped) run directory instead of running it again
REUSE_RUN: list[Path] = []


def heterogeneous(name: str) -> dict[str, Any]:
    config = f"experiments/{name}.toml"
    if REUSE_RUN:
        d = REUSE_RUN[0]
        env = _json(d / "environment.json")
        # (no load average: it would be today's, not the run's)
        data = {"experiment": name, "machine": {k: v for k, v in machine().items() if k != "loadavg_start"},
                "started_utc": env.get("created_utc", d.name),
                "reused_run_dir": str(d), **run_dir_data(d, config)}
    else:
        data = plain_run(name)
    keep = ("command", "run", "rounds", "clients")
    with_ = run(config, "--engine", "estimate")  # stragglers are the plan's links: the model sees them
    without = run(config, "--engine", "estimate", "--set", "faults.stragglers=[]")
    return {**data, "model": {"with_stragglers": {k: with_[k] for k in keep},
                              "no_stragglers": {k: without[k] for k in keep},
                              "how": "the estimate engine on the same config (stragglers are links in every engine)"}}


#: the deadlines experiment's round policies (issue 32.4): each a `--set` list on experiments/deadlines.toml
DEADLINE_POLICIES: dict[str, list[str]] = {
    "wait-for-all": [],
    "deadline-15s": ["round.deadline_s=15"],
    "over-select-1.3": ["round.over_select=1.3"],
    "over-select-1.3+deadline-15s": ["round.over_select=1.3", "round.deadline_s=15"],
    # SecAgg+ (5 shares, threshold 2: a round survives any 3 of a client's 4 neighbours gone): a late client
    # is one more dropout, whose masks the server's unmask stage reconstructs
    "secagg+wait-for-all": ["privacy.secagg.enabled=true", "privacy.secagg.num_shares=5"],
    "secagg+deadline-15s": ["privacy.secagg.enabled=true", "privacy.secagg.num_shares=5", "round.deadline_s=15"],
    "secagg+over-select-1.3": ["privacy.secagg.enabled=true", "privacy.secagg.num_shares=5", "round.over_select=1.3"],
}
#: the accuracy the deadlines experiment counts the time to
DEADLINES_TARGET = 0.85
#: the deadlines experiment runs every policy once per seed: a seed draws the availability, the cohorts, the data
#: partition and the model's start, so the spread over seeds is what a policy's answer can be trusted to
DEADLINE_SEEDS = (0, 1, 2, 3, 4)


def failure_reason(message: str) -> str:
    """A failed `fedbw run`'s reason in one line: fedbw's own one-line error (``error: …``) where its output has
    one, else the output's last line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if line.lower().startswith("error")]
    if not starts:
        return (lines or ["(no output)"])[-1]
    said = []  # the error line and its continuation (the console wraps it), up to the log's tail
    for line in lines[starts[-1]:]:
        if line.startswith("---") or (said and line.lower().startswith("finished rounds")):
            break
        said.append(line)
    return " ".join(said)


def deadlines(name: str) -> dict[str, Any]:
    """Every round policy on the same population, once per seed (one `fedbw run` each): its rounds and summary."""
    m, policies, environment = machine(), [], None
    for policy, sets in DEADLINE_POLICIES.items():
        runs = []
        for seed in DEADLINE_SEEDS:
            args = [a for s in [*sets, f"seed={seed}"] for a in ("--set", s)]
            try:
                data = run(f"experiments/{name}.toml", *args)
            except SystemExit as exc:  # a run that failed is kept as such, with its reason; the others are kept
                runs.append({"seed": seed, "rounds": [], "error": failure_reason(str(exc)),
                             "command": shlex.join(["fedbw", "run", f"experiments/{name}.toml", *args])})
                continue
            runs.append({"seed": seed, **{k: data[k] for k in (
                "command", "started_utc", "finished_utc", "run", "engine", "rounds", "summary")}})
            environment = environment or data["environment"]
        policies.append({"policy": policy, "set": sets, "runs": runs})
    return {"experiment": name, "machine": m, "environment": environment or {}, "target_accuracy": DEADLINES_TARGET,
            "seeds": list(DEADLINE_SEEDS), "policies": policies}


EXPERIMENTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "quickstart": plain_run,
    "uplink-profiles": plain_run,
    "datacenter-vs-federated": datacenter,
    "compression": compression,
    "local-steps": local_steps,
    "heterogeneous-clients": heterogeneous,
    "deadlines": deadlines,
}


def regenerate_docs() -> list[Path]:
    """The generated tables of docs/experiments/ from the JSON (other docs are their own benchmarks' to
    rewrite: `fedbw docs` does them all)."""
    from fedbw.report.docs import docs_with_tables, render_text

    changed = []
    for page in docs_with_tables(ROOT):
        if page.parent != IMG.parent:
            continue
        text = page.read_text(encoding="utf-8")
        new = render_text(text, ROOT, str(page))
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help=f"experiments to run (default: all): {', '.join(EXPERIMENTS)}")
    ap.add_argument("--plots-only", action="store_true", help="only redraw the PNGs from the committed JSON")
    ap.add_argument("--run-dir", type=Path, help="heterogeneous-clients: the emulated run directory to use "
                                                 "(e.g. one that stopped early) instead of running it again")
    args = ap.parse_args()
    if args.run_dir is not None:
        if not (args.run_dir / "records.jsonl").is_file():
            ap.error(f"--run-dir {args.run_dir}: no records.jsonl there")
        REUSE_RUN.append(args.run_dir.resolve())
    unknown = [n for n in args.names if n not in EXPERIMENTS]
    if unknown:
        ap.error(f"unknown experiment(s) {', '.join(unknown)}; choose from {', '.join(EXPERIMENTS)}")
    names = args.names or list(EXPERIMENTS)
    from fedbw.report.doc_tables import render_result

    for name in names:
        result = FIGURES[name][0]
        if not args.plots_only:
            print(f"{name} ({utc()})", flush=True)
            RETRIES.clear()
            from fedbw.calibration.file import load_costs, model_stamp

            data = {**EXPERIMENTS[name](name), "retried_after_ray_start_timeout": list(RETRIES),
                    "made_by": model_stamp(load_costs(None))}  # the experiments run on the catalog's calibration
            path = ROOT / RESULTS / result
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            print(render_result(result, data))
        print(f"figure: {draw(ROOT, name, IMG / f'{name}.png').relative_to(ROOT)}")
    for page in regenerate_docs():
        print(f"rewrote {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
