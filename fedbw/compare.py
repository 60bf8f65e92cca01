"""The questions `fedbw estimate`, `fedbw sweep --param` and `fedbw compare` answer.

How long is one round of this model on each uplink profile, how much of it is communication, and
what would one AllReduce of the same model cost on each data-center fabric? For finished runs (and
sweeps, expanded to their points): the same questions answered from their records, side by side,
each run labelled by what sets it apart.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from fedbw.config import config_from_dict, config_to_dict, load_config
from fedbw.engines.estimate import estimate_fabrics, estimate_profiles, steady_round
from fedbw.errors import ConfigError
from fedbw.engines.cohorts import planned
from fedbw.results.compared import ComparedRun, FabricRatio, RunSet
from fedbw.results.estimates import EstimateReport, SweepPoint
from fedbw.results.summary import RunSummary, summarize
from fedbw.tomlvalue import format_value, parse_value

DEFAULT_COMPARE_PROFILES = ["home-30", "home-50", "home-80"]


def estimate_report(config: Path | None, *, model: str | None = None, profiles: list[str] | None = None,
                    fabrics: list[str] | None = None, ranks: int | None = None, clients_per_round: int | None = None,
                    secagg: str | None = None, codec: str | None = None,
                    overrides: list[str] | None = None) -> EstimateReport:
    sets = list(overrides or [])
    if model:
        sets.append(f"model.name={format_value(model)}")
    if ranks is not None:
        sets.append(f"datacenter.ranks={ranks}")
    if fabrics:
        sets.append("datacenter.fabrics=[" + ", ".join(format_value(f) for f in fabrics) + "]")
    if clients_per_round is not None:
        sets.append(f"clients.per_round={clients_per_round}")
        sets.append(f"clients.total={clients_per_round}")
    if secagg is not None:
        if secagg not in ("off", "stock", "packed"):
            raise ConfigError(f"--secagg must be off, stock or packed (got {secagg!r})")
        sets.append(f"privacy.secagg.enabled={'false' if secagg == 'off' else 'true'}")
        if secagg != "off":
            sets.append(f"privacy.secagg.mode={format_value(secagg)}")
    if codec is not None:
        sets.append(f"compression.codec={format_value(codec)}")
    sets.append('engine="estimate"')
    base: dict[str, Any] = config_to_dict(load_config(config)) if config else {}
    cfg = config_from_dict(base, sets, source=str(config) if config else "estimate")
    plan = planned(cfg)
    chosen = profiles or ([m.profile for m in cfg.network.mix] if config else DEFAULT_COMPARE_PROFILES)
    return EstimateReport(cfg, plan.model.name, plan.model.params, cfg.clients.per_round, steady_round(plan),
                          estimate_profiles(plan, chosen),
                          estimate_fabrics(plan.model.params, cfg.datacenter.fabrics, cfg.datacenter.ranks,
                                           cfg.datacenter.grad_bytes_per_value))


# ------------------------------------------------------------------------------------------- sweeps

#: Shorthand sweep parameters that act on every client's link rather than on one config key.
LINK_PARAMS = ("up_mbps", "down_mbps", "rtt_ms")


def sweep_values(values: str | None, range_: str | None) -> list[Any]:
    """Parse ``--values a,b,c`` or ``--range start:stop:count``."""
    if (values is None) == (range_ is None):
        raise ConfigError("give exactly one of --values a,b,c or --range start:stop:count")
    if values is not None:
        return [parse_value(v.strip()) for v in values.split(",")]
    parts = range_.split(":") if range_ else []
    try:
        start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        raise ConfigError(f"--range {range_!r}: write start:stop:count, e.g. --range 10:100:10") from None
    if count < 1 or count > 100_000:
        raise ConfigError("--range count must be between 1 and 100000")
    if count == 1:
        return [start]
    return [start + (stop - start) * i / (count - 1) for i in range(count)]


def run_sweep(config: Path, param: str, points: list[Any], overrides: list[str] | None = None) -> list[SweepPoint]:
    """Estimate one steady-state round per value of ``param`` (a config key or up_mbps/down_mbps/rtt_ms)."""
    from fedbw.engines.estimate import steady_timeline

    base = config_to_dict(load_config(config, overrides))
    base["engine"] = "estimate"
    rows = []
    for value in points:
        if param in LINK_PARAMS:
            cfg = config_from_dict(base, source=str(config))
            plan = planned(cfg)
            plan.clients = [_with_link(c, param, float(value)) for c in plan.clients]
        else:
            cfg = config_from_dict(base, [f"{param}={format_value(value)}"], source=f"{config} ({param}={value})")
            plan = planned(cfg)
        r = steady_round(plan)
        tl = steady_timeline(plan)  # the rounds before it on the same deployment clock, as estimate runs them
        first = tl.client_rows(plan.sampled_clients(r)[0])
        rows.append(SweepPoint(value, tl.round_time_s, tl.comm_time_s, tl.comm_fraction, tl.bandwidth_bound,
                               sum(t.bytes_up for t in first), sum(t.bytes_down for t in first),
                               lost_replies=plan.lost_replies()))
    return rows


def _with_link(client, param: str, value: float):
    from dataclasses import replace

    if value < 0 or (param != "rtt_ms" and value == 0):
        raise ConfigError(f"{param} must be positive, got {value}")
    return client._replace(access=replace(client.access, **{param: value}))


# ---------------------------------------------------------------------------- finished runs side by side

def load_runs(paths: list[Path]) -> RunSet:
    """Run directories (or records files) and sweep directories (expanded to their finished points).

    A damaged or foreign records file, an empty one, or one without a finished round is a ConfigError
    naming the file (and the line); a torn last line is skipped and kept as a note.
    """
    from fedbw.results.sweep_index import is_sweep_dir, read_index

    runs: list[ComparedRun] = []
    notes: list[str] = []
    sweeps = []
    for path in paths:
        path = Path(path)
        if is_sweep_dir(path):
            index = read_index(path)
            sweeps.append((path, index))
            for p in index.points:
                if p.status != "done" or not p.run_dir:
                    notes.append(f"{path.name}: point {p.index} ({p.label}) is {p.status}"
                                 + (f" ({p.error})" if p.error else "") + "; left out")
                    continue
                runs.append(load_run(path / p.run_dir, p.overrides))
        elif path.is_dir() and not (path / "records.jsonl").exists():
            raise ConfigError(f"{path}: neither a run directory (no records.jsonl) nor a sweep (no sweep.json)")
        else:
            runs.append(load_run(path))
    for r in runs:
        notes.extend(r.notes)
    if not runs:
        raise ConfigError("no finished run to show: " + ("; ".join(notes) if notes else "give run directories"))
    _label(runs, single_sweep=len(sweeps) == 1 and len(paths) == 1)
    return RunSet(runs, notes, sweeps)


def load_run(path: Path, overrides: dict[str, Any] | None = None) -> ComparedRun:
    """One finished (or interrupted) run directory, or its records.jsonl, as compare, report and
    :func:`fedbw.load` read it: records, their summary, the resolved config, the recorded AllReduce times.
    ConfigError naming the file when it is damaged or no round finished."""
    import json

    from fedbw.results.records import read_records

    f = read_records(path)
    if not f.rounds:
        raise ConfigError(f"{f.path}: no finished round (only {len(f.clients)} client lines after the header: the "
                          f"run stopped before its first round ended); nothing to show")
    run_dir = f.path.parent
    cfg_path = run_dir / "resolved_config.json"
    try:
        config = json.loads(cfg_path.read_text()) if cfg_path.exists() else None
    except json.JSONDecodeError:
        raise ConfigError(f"{cfg_path}: not valid JSON; the run directory is damaged") from None
    summary = summarize(run_dir.name, f.clients, f.rounds)
    notes = list(f.notes)
    fabrics = _fabrics(run_dir, summary, notes)
    return ComparedRun(run_dir.name, run_dir, summary, config, privacy_label(config), fabrics, notes,
                       dict(overrides or {}), f.clients, f.rounds)


def privacy_label(config: dict[str, Any] | None) -> str:
    """A run's privacy setting in a few words: "none", "SecAgg+ stock", "DP central-client-fixed σ=0.8"."""
    if not config:
        return "?"
    priv = config.get("privacy", {})
    sa, dp = priv.get("secagg", {}), priv.get("dp", {})
    parts = []
    if sa.get("enabled"):
        parts.append(f"SecAgg+ {sa.get('mode', '')}".strip())
    if dp.get("enabled"):
        mode = dp.get("mode", "")
        noise = f" ε₀={dp.get('local_epsilon')}" if mode == "local" else f" σ={dp.get('noise_multiplier')}"
        parts.append(f"DP {mode}{noise}")
    return " + ".join(parts) or "none"


def _fabrics(run_dir: Path, summary: RunSummary, notes: list[str]) -> list[FabricRatio]:
    """The run's rounds against the AllReduce times it recorded (never re-estimated from today's catalog)."""
    from fedbw.results.compared import ALLREDUCE_FILE, read_allreduce

    rows = read_allreduce(run_dir)
    if rows is None:
        notes.append(f"{run_dir.name}: no {ALLREDUCE_FILE} (a run of an older fedbw, or an app run): no AllReduce "
                     "comparison; rerun it to get one")
        return []
    return [FabricRatio(f.fabric, f.ranks, f.time_s,
                        summary.mean_round_time_s / f.time_s if f.time_s > 0 else None) for f in rows]


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _mix_label(mix: Any) -> str:
    if isinstance(mix, list) and mix and all(isinstance(m, dict) for m in mix):
        if len(mix) == 1:
            return str(mix[0].get("profile"))
        return " + ".join(f"{m.get('profile')}×{m.get('share'):g}" for m in mix)
    return str(mix)


def _label(runs: list[ComparedRun], single_sweep: bool) -> None:
    """Give every run a label that says what sets it apart from the others."""
    from fedbw.results.sweep_index import describe_value, point_label, short_key

    if single_sweep:
        for r in runs:
            r.label = point_label(r.overrides)
    elif len(runs) > 1 and all(r.config for r in runs):
        flats = [_flat(r.config or {}) for r in runs]
        keys = [k for k in dict.fromkeys(k for f in flats for k in f) if k not in ("name", "output_dir")
                and len({repr(f.get(k)) for f in flats}) > 1]
        for r, f in zip(runs, flats):
            parts = [(k, _mix_label(f.get(k)) if k == "network.mix" else describe_value(f.get(k))) for k in keys]
            if len(parts) == 1:
                r.label = parts[0][1]
            elif parts:
                r.label = " · ".join(f"{'profile' if k == 'network.mix' else short_key(k, keys)}={v}"
                                     for k, v in parts)
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.label] = seen.get(r.label, 0) + 1
    for r in runs:
        if seen[r.label] > 1 and r.label != r.path.name:
            r.label = f"{r.label} ({r.path.name})"


def comparison_json(runs: list[ComparedRun], target_accuracy: float | None) -> list[dict[str, Any]]:
    """What `fedbw compare --json` prints: per run, its label, summary, time to target and fabric ratios."""
    from fedbw.results.summary import time_to_accuracy

    return [{"label": r.label, "run_dir": str(r.path), "privacy": r.privacy, "overrides": r.overrides,
             **asdict(r.summary),
             "target_accuracy": target_accuracy,
             "time_to_target_s": None if target_accuracy is None else time_to_accuracy(r.summary, target_accuracy),
             "fabrics": [asdict(f) for f in r.fabrics], "notes": r.notes} for r in runs]


def point_summaries(sweep_dir: Path, index: Any) -> dict[int, RunSummary | None]:
    """Each finished point's summary (None where its records cannot be read), for the sweep's table."""
    from fedbw.results.summary import summarize_run_dir

    out: dict[int, RunSummary | None] = {}
    for p in index.points:
        out[p.index] = None
        if p.run_dir and (Path(sweep_dir) / p.run_dir / "records.jsonl").exists():
            try:
                out[p.index] = summarize_run_dir(Path(sweep_dir) / p.run_dir)
            except ConfigError:
                pass
    return out
