"""The tables of docs/experiments/*.md, each from the result JSON benchmarks/experiments.py wrote.

Three shapes of result file (benchmarks/results/experiments/<name>.json):

* a **run** (quickstart, uplink-profiles, heterogeneous-clients): the run's records (``rounds``,
  ``clients``), its resolved ``config`` and ``environment``, the ``command`` that made it; the
  heterogeneous run adds ``model``: the estimate engine's records of the same links;
* a **study** (compression, local-steps): the study.json `fedbw study --result`
  wrote (one row per variant and profile), plus, for local steps, each variant's ``curves`` (accuracy
  per round on the run's own clock) and for compression ``estimates`` of larger models;
* **estimates** (datacenter-vs-federated): `fedbw estimate --json` once per model;
* **policies** (deadlines): per round policy its ``runs``, one per seed, each its ``rounds`` and ``summary``.

Registered as generated blocks in :mod:`fedbw.report.doc_tables`; pure functions of the data.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Callable
from statistics import mean
from typing import Any

from fedbw.netmodel.spread import quantiles
from fedbw.report.doc_blocks import md_table
from fedbw.report.format import fmt_bytes, fmt_s
from fedbw.report.format import fmt_pct as _pct
from fedbw.report.round_policy import abandoned_why

Data = dict[str, Any]


def _acc(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}×"


def provenance(data: Data) -> str:
    """Where a result came from: command, start time, machine and versions."""
    env = data.get("environment") or {}
    pkgs = env.get("packages") or {}
    machine = data.get("machine") or {}
    load = machine.get("loadavg_start")
    return (f"`{data.get('command', '?')}`, started {data.get('started_utc', '?')} on "
            f"{env.get('platform', machine.get('platform', '?'))}, {env.get('cpu_count', machine.get('cpus', '?'))} "
            f"CPU(s)" + (f" (load average {load:.1f} at the start)" if isinstance(load, (int, float)) else "")
            + f", Python {env.get('python', '?')}, flwr {pkgs.get('flwr', '?')}, torch {pkgs.get('torch', '?')}.\n")


# ------------------------------------------------------------------------------------------- runs


def stopped_note(data: Data) -> str:
    """A run that ended before its last round says so, and why (its summary's ``stopped_early``)."""
    reason = (data.get("summary") or {}).get("stopped_early")
    if not reason:
        return ""
    first = str(reason).strip().splitlines()[0]
    return f"**Stopped early**: {first} (the table shows the rounds it finished).\n\n"


def steady(rounds: list[Data]) -> list[Data]:
    """Rounds 2 and later (round 1 has cold starts), or round 1 alone."""
    return [r for r in rounds if r["round"] >= 2] or rounds


def _live_clients(data: Data, rounds: set[int] | None = None) -> list[Data]:
    return [c for c in data["clients"] if not c.get("dropped") and (rounds is None or c["round"] in rounds)]


def profile_rows(data: Data) -> list[list[str]]:
    """Per link profile, means over every client and round: where a client's time went."""
    groups: dict[str, list[Data]] = defaultdict(list)
    for c in _live_clients(data):
        groups[c["profile"]].append(c)
    rows = []
    for profile in sorted(groups, key=lambda p: -mean(c["t_total_s"] for c in groups[p])):
        cs = groups[profile]
        total = mean(c["t_total_s"] for c in cs)
        comm = mean(c["t_down_s"] + c["t_up_s"] for c in cs)
        rows.append([profile, str(len(cs)), fmt_bytes(mean(c["bytes_up"] for c in cs)),
                     fmt_s(mean(c["t_down_s"] for c in cs)), fmt_s(mean(c["t_compute_s"] for c in cs)),
                     fmt_s(mean(c["t_up_s"] for c in cs)), fmt_s(mean(c["t_framework_s"] for c in cs)),
                     fmt_s(total), _pct(comm / total if total > 0 else None)])
    return rows


PROFILE_HEAD = ["profile", "client rounds", "up/client", "download", "compute", "upload", "framework",
                "client time", "comm share"]
ROUND_HEAD = ["round", "round time", "comm time", "compute", "framework", "comm share", "up (all clients)",
              "accuracy", "loss"]


def round_rows(rounds: list[Data]) -> list[list[str]]:
    return [[str(r["round"]), fmt_s(r["round_time_s"]), fmt_s(r["comm_time_s"]), fmt_s(r["compute_time_s"]),
             fmt_s(r["framework_time_s"]), _pct(r.get("comm_fraction")), fmt_bytes(r["bytes_up_total"]),
             _acc(r.get("accuracy")), "-" if r.get("loss") is None else f"{r['loss']:.3f}"] for r in rounds]


def run_markdown(data: Data) -> str:
    """A plain run: time per client by link profile, then every round."""
    engine = data.get("engine", "?")
    return ("**Per client and round, by link profile** (means over all rounds; comm share = (download + "
            "upload) / client time):\n\n"
            + md_table(PROFILE_HEAD, profile_rows(data))
            + f"\n**Rounds** ({engine}; round time on the network clock, comm time on the critical path):\n\n"
            + md_table(ROUND_HEAD, round_rows(data["rounds"]))
            + "\n" + stopped_note(data) + provenance(data))


def _straggler_factors(config: Data) -> dict[int, float]:
    return {s["client"]: s["link_factor"] for s in (config.get("faults") or {}).get("stragglers", [])}


def _client_means(clients: list[Data]) -> dict[int, dict[str, float]]:
    by: dict[int, list[Data]] = defaultdict(list)
    for c in clients:
        by[c["client_id"]].append(c)
    keys = ("t_down_s", "t_up_s", "t_framework_s", "t_total_s")
    return {cid: {k: mean(c[k] for c in cs) for k in keys} | {"profile": cs[0]["profile"]}  # type: ignore[dict-item]
            for cid, cs in by.items()}


def heterogeneous_markdown(data: Data) -> str:
    """Every client of an emulated run beside the model's prediction for the same links (steady rounds)."""
    model = data["model"]
    steady_ids = {r["round"] for r in steady(data["rounds"])}
    emu = _client_means(_live_clients(data, steady_ids))
    est = _client_means([c for c in model["with_stragglers"]["clients"] if c["round"] in steady_ids])
    factors = _straggler_factors(data["config"])
    head = ["client", "profile", "straggler", "emulate: download", "upload", "framework", "client time",
            "estimate: download", "upload", "client time"]
    rows = []
    for cid in sorted(emu):
        e, m = emu[cid], est.get(cid, {})
        f = factors.get(cid)
        rows.append([str(cid), str(e["profile"]), "-" if f is None else f"× {f:g}", fmt_s(e["t_down_s"]),
                     fmt_s(e["t_up_s"]), fmt_s(e["t_framework_s"]), fmt_s(e["t_total_s"]),
                     fmt_s(m.get("t_down_s")), fmt_s(m.get("t_up_s")), fmt_s(m.get("t_total_s"))])
    by_round = {name: {r["round"]: r for r in model[name]["rounds"]} for name in ("with_stragglers", "no_stragglers")}
    rhead = ["round", "emulate", "comm share", "host share", "estimate, same links", "estimate, no stragglers",
             "server link wait (estimate)"]
    rrows = []
    for r in data["rounds"]:
        w, n = by_round["with_stragglers"].get(r["round"]), by_round["no_stragglers"].get(r["round"])
        host = r.get("host") or {}
        share = host.get("share")
        rrows.append([str(r["round"]), fmt_s(r["round_time_s"]), _pct(r.get("comm_fraction")),
                      "-" if share is None else _pct(share) + (" ◆ host-bound" if r.get("host_bound") else ""),
                      fmt_s(w and w["round_time_s"]), fmt_s(n and n["round_time_s"]),
                      fmt_s(w and (w.get("extra") or {}).get("server_link_s"))])
    # how the model saw the stragglers: results made before stragglers were links in every engine gave the
    # model each straggler's slowed link as a network override
    how = model.get("how", "the same links, each straggler's slowed link given to the model as a network override")
    return ("**Per client** (means over round(s) " + ", ".join(map(str, sorted(steady_ids))) + f"; estimate: {how}):\n\n"
            + md_table(head, rows, right=set(range(3, len(head))))
            + "\n**Rounds**:\n\n" + md_table(rhead, rrows) + "\n" + host_bound_note(data["rounds"])
            + stopped_note(data) + provenance(data))


def host_bound_note(rounds: list[Data]) -> str:
    """Say it when emulated rounds were host-bound: their times then describe the machine, not the links."""
    bound = [r["round"] for r in rounds if r.get("host_bound")]
    if not bound:
        return ""
    which = "Every emulated round" if len(bound) == len(rounds) else "Round(s) " + ", ".join(map(str, bound))
    return (f"**{which} host-bound** (◆): the emulating host's CPU held that share of the round, so its emulated "
            "times describe this machine, not the links; the estimate columns show what the links alone do.\n\n")


# ---------------------------------------------------------------------------------------- studies


def study_rows(data: Data) -> dict[tuple[str, str], Data]:
    return {(r["variant"], r["profile"]): r for r in data["rows"]}


def _variants(data: Data) -> list[str]:
    return [v["name"] for v in data["variants"]]


def _study_note(data: Data) -> str:
    return ("Per-round figures are means over the steady rounds (2 and later); each variant ran once "
            f"({data.get('engine', '?')} engine) and its rounds were re-timed with every sampled client on each "
            "profile. Study: " + provenance(data))


def compression_markdown(data: Data) -> str:
    """Measured codecs on the trained model, then the model's answer for larger models."""
    rows, profiles = study_rows(data), data["profiles"]
    first, last = profiles[0], profiles[-1]
    head = ["codec", "up/client", "up vs none", f"round on {first}", f"round on {last}", f"comm share on {first}",
            "accuracy"]
    body = []
    for v in _variants(data):
        a, b = rows[(v, first)], rows[(v, last)]
        body.append([v, fmt_bytes(a["bytes_up_per_client"]), _ratio(a.get("uplink_ratio")), fmt_s(a["round_time_s"]),
                     fmt_s(b["round_time_s"]), _pct(a["comm_fraction"]), _acc(a.get("accuracy"))])
    text = md_table(head, body) + "\n" + _study_note(data)
    estimates = data.get("estimates") or []
    if estimates:
        ehead = ["model", "codec", "up/client", "up vs none", f"round on {first}", f"comm share on {first}",
                 f"round on {last}"]
        erows, base = [], {}
        for e in estimates:
            p = {x["profile"]: x for x in e["profiles"]}
            up = p[first]["bytes_up_per_client"]
            base.setdefault(e["model"], up)
            erows.append([e["model"], e["variant"], fmt_bytes(up), _ratio(up / base[e["model"]]),
                          fmt_s(p[first]["round_time_s"]), _pct(p[first]["comm_fraction"]),
                          fmt_s(p[last]["round_time_s"])])
        text += ("\n**Larger models** (`fedbw estimate --model M --codec C`, the analytic engine: predicted bytes, "
                 f"{estimates[0].get('clients_per_round', '?')} clients per round, compute from the device profile):"
                 "\n\n" + md_table(ehead, erows, right={2, 3, 4, 5, 6}))
    return text


def time_to_target(curve: list[Data], target: float) -> tuple[int | None, float | None]:
    """The first round whose accuracy reaches ``target`` and the round clock's time until its end."""
    elapsed = 0.0
    for point in curve:
        elapsed += point["round_time_s"]
        if point.get("accuracy") is not None and point["accuracy"] >= target:
            return point["round"], elapsed
    return None, None


def local_steps_markdown(data: Data) -> str:
    rows, profiles = study_rows(data), data["profiles"]
    first, last = profiles[0], profiles[-1]
    target = data.get("target_accuracy", 0.9)
    curves = data.get("curves") or {}
    head = ["variant", "local steps", f"round on {first}", f"round on {last}", "compute per round", "final accuracy",
            f"first round ≥ {100 * target:.0f} %", f"time to {100 * target:.0f} % ({data.get('curve_profile', first)})"]
    body = []
    for v in data["variants"]:
        a, b = rows[(v["name"], first)], rows[(v["name"], last)]
        steps = next((s.split("=", 1)[1] for s in v["set"] if s.startswith("training.local_steps=")), "-")
        rnd, t = time_to_target(curves.get(v["name"], []), target)
        body.append([v["name"], steps, fmt_s(a["round_time_s"]), fmt_s(b["round_time_s"]), fmt_s(a["compute_time_s"]),
                     _acc(a.get("accuracy")), "not reached" if rnd is None else str(rnd), fmt_s(t)])
    return (md_table(head, body) + f"\nTime to accuracy sums each round of the variant's own run (its clients on "
            f"{data.get('curve_profile', first)}, Flower's costs included) up to the first round whose server-side "
            f"accuracy reaches {100 * target:.0f} %. " + _study_note(data))


# -------------------------------------------------------------------------------------- estimates


def datacenter_markdown(data: Data) -> str:
    """Per model: a federated round on home uplinks against one AllReduce of its gradient per fabric."""
    models = data["models"]
    fabrics = [f["fabric"] for f in models[0]["fabrics"]]
    profiles = [p["profile"] for p in models[0]["profiles"]]
    slow, fast = profiles[0], profiles[-1]
    head = (["model", "params", "update", f"FL round on {slow}", f"FL comm on {slow}", f"FL round on {fast}"]
            + [f"AllReduce {f}" for f in fabrics] + [f"FL comm on {slow} ÷ AllReduce {fabrics[0]}",
                                                   f"÷ AllReduce {fabrics[-1]}"])
    rows = []
    for m in models:
        p = {x["profile"]: x for x in m["profiles"]}
        f = {x["fabric"]: x for x in m["fabrics"]}
        comm = p[slow]["t_down_s"] + p[slow]["t_up_s"]
        rows.append([m["model"], f"{m['params']:,}", fmt_bytes(p[slow]["bytes_up_per_client"]),
                     fmt_s(p[slow]["round_time_s"]), fmt_s(comm), fmt_s(p[fast]["round_time_s"])]
                    + [fmt_s(f[name]["time_s"]) for name in fabrics]
                    + [f"{comm / f[fabrics[0]]['time_s']:,.0f}×", f"{comm / f[fabrics[-1]]['time_s']:,.0f}×"])
    first = models[0]["fabrics"][0]
    per_value = first["size_bytes"] / models[0]["params"]
    return (md_table(head, rows) + f"\n{models[0]['clients_per_round']} clients per round (FL) against "
            f"{first['ranks']} ranks (one AllReduce of the gradient at {per_value:.0f} B per value: the fastest of "
            f"ring, recursive doubling and Rabenseifner in the α-β model, docs/methodology.md); FL comm = "
            f"download + upload of one client on {slow}; FL round adds compute (device profile "
            f"{data.get('device_profile', '?')}) and Flower's own costs. " + provenance(data))


# -------------------------------------------------------------------------------------- policies


def time_to_target_interval(rounds: list[Data], target: float) -> tuple[float, float] | None:
    """The time to ``target`` with each round at the low and at the high end of its 80 % interval (None: not
    reached, or a round without an interval): wider than the sum's own 80 % interval, never narrower."""
    low = high = 0.0
    for r in rounds:
        span = r.get("round_interval_s")
        if span is None:
            return None
        low, high = low + span[0], high + span[1]
        if r.get("accuracy") is not None and r["accuracy"] >= target:
            return low, high
    return None


def _range_min(values: list[float]) -> str:
    """A median over seeds and their range, in minutes."""
    mid = statistics.median(values)
    return f"{mid / 60:.1f} min" + (f" [{min(values) / 60:.1f}–{max(values) / 60:.1f}]" if len(values) > 1 else "")


def _seeds_reached(values: list[float | None], fmt: Callable[[list[float]], str]) -> str:
    """A statistic over the seeds that reached the target, saying how many did when not all did."""
    reached = [v for v in values if v is not None]
    if not reached:
        return "not reached"
    return fmt(reached) + ("" if len(reached) == len(values) else f" ({len(reached)} of {len(values)} seeds)")


def deadlines_markdown(data: Data) -> str:
    """Per round policy on one population, over its seeds: its rounds, what it left out and its time to the
    target accuracy (median over seeds and their range)."""
    target = data.get("target_accuracy", 0.85)
    pct = f"{100 * target:.0f} %"
    head = ["policy", "seeds", "round: median [10th–90th percentile of rounds]", "updates used / sampled", "dropped",
            "late", "wasted uplink per run", f"rounds to {pct}", f"time to {pct}: median [range over seeds]",
            "with each round's 80 % bounds", "final accuracy (median)"]
    body = []
    for p in data["policies"]:
        runs = p["runs"]
        done = [r for r in runs if r["rounds"]]
        if not done:  # every run failed: the row says so
            error = next((r.get("error") for r in runs if r.get("error")), "no rounds")
            body.append([p["policy"], f"0 of {len(runs)}", f"failed: {error}"] + ["-"] * (len(head) - 3))
            continue
        rounds = [x for r in done for x in r["rounds"]]
        low, mid, high = quantiles([x["round_time_s"] for x in rounds], (0.1, 0.5, 0.9))
        reached = [time_to_target(r["rounds"], target) for r in done]
        bounds = [time_to_target_interval(r["rounds"], target) for r in done]
        wasted = [x.get("wasted_bytes_up") for x in rounds]
        finals = [a for r in done if (a := r["rounds"][-1].get("accuracy")) is not None]
        known = [b for b in bounds if b is not None]
        body.append([
            p["policy"], f"{len(done)}" if len(done) == len(runs) else f"{len(done)} of {len(runs)}",
            f"{fmt_s(mid)} [{fmt_s(low)}–{fmt_s(high)}]",
            f"{sum(x['replies'] for x in rounds if not x.get('abandoned'))} / {sum(x['num_clients'] for x in rounds)}",
            str(sum(x.get("dropped_clients", 0) for x in rounds)), str(sum(x.get("late_clients", 0) for x in rounds)),
            "-" if any(w is None for w in wasted) else fmt_bytes(sum(wasted) / len(done)),  # type: ignore[arg-type]
            _seeds_reached([None if n is None else float(n) for n, _ in reached],
                           lambda v: f"{statistics.median(v):.0f}" + (f" [{min(v):.0f}–{max(v):.0f}]" if len(v) > 1 else "")),
            _seeds_reached([t for _, t in reached], _range_min),
            "-" if not known else f"{min(b[0] for b in known) / 60:.1f}–{max(b[1] for b in known) / 60:.1f} min",
            "-" if not finals else _acc(statistics.median(finals))])
    first = data["policies"][0]["runs"][0]
    env = data.get("environment") or {}
    pkgs = env.get("packages") or {}
    seeds = data["seeds"]
    return (md_table(head, body, right=set(range(1, len(head))))
            + f"\nEach policy is one `{re.sub(r' --set seed=[0-9]+', '', first['command'])} --set seed=K` run per seed "
            f"(K = {', '.join(map(str, seeds))}) with its own `--set` "
            f"(the engine's own clock: the simulate engine's measured messages on the model's clock, Flower's costs "
            f"included). A seed draws the clients' availability, the cohorts, the data partition and the model's "
            f"start. A round's percentiles are over every round of every seed; the time to {pct} sums a run's rounds "
            f"up to the first whose server-side accuracy reaches it; the median and range are over seeds, and the "
            f"next column widens that range by every round's 10th and 90th percentile on the clock (the smallest "
            f"low and largest high over seeds). Updates used / sampled and the counts are over all rounds of all "
            f"seeds; an abandoned round used none. Runs started {first.get('started_utc', '?')} on "
            f"{env.get('platform', '?')}, "
            f"{env.get('cpu_count', '?')} CPU(s), Python {env.get('python', '?')}, flwr {pkgs.get('flwr', '?')}, "
            f"torch {pkgs.get('torch', '?')}.\n" + _abandoned_rounds(data["policies"]) + _failed_runs(data["policies"]))


def _abandoned_rounds(policies: list[dict[str, Any]]) -> str:
    """Per policy, the rounds that used no update (SecAgg+ halted them, or fewer than round.min_replies came):
    the server kept its model and the run went on, as Flower's does."""
    lines = []
    for p in policies:
        gone = [(r["seed"], x) for r in p["runs"] for x in r["rounds"] if x.get("abandoned")]
        if gone:
            halted = sum("secagg_halted" in (x.get("extra") or {}) for _, x in gone)
            seeds = sorted({seed for seed, _ in gone})
            why = abandoned_why(len(gone), halted)
            lines.append(f"{p['policy']}: {len(gone)} ({why}; seed{'s' if len(seeds) > 1 else ''} "
                         f"{', '.join(map(str, seeds))})")
    return ("" if not lines else "\nRounds abandoned, the server keeping its model (the run goes on, as Flower's "
            "does): " + "; ".join(lines) + ".\n")


def _failed_runs(policies: list[dict[str, Any]]) -> str:
    """The runs that failed in a policy that has others (their rounds are not in the table), with their reason."""
    failed = [(p["policy"], r) for p in policies if any(r["rounds"] for r in p["runs"])
              for r in p["runs"] if not r["rounds"] and r.get("error")]
    return "".join(f"\nFailed, left out of its row: {policy}, seed {r['seed']}: {r['error']}\n" for policy, r in failed)