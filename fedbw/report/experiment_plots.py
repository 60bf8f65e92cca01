"""The figures of docs/experiments/*.md, drawn from the result JSON alone (never from a live run).

:func:`draw` reads ``benchmarks/results/<result>``, draws the experiment's figure and stamps the PNG
with the SHA-256 of the JSON it was drawn from (a PNG text chunk, ``fedbw-data-sha256``), so a test
can tell a figure that no longer matches its committed data without comparing pixels.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any, Callable

from fedbw.report.doc_blocks import RESULTS
from fedbw.report.experiment_tables import steady, study_rows

Data = dict[str, Any]
SHA_KEY = "fedbw-data-sha256"
PARTS = {"download": "#4C72B0", "compute": "#55A868", "upload": "#C44E52", "framework": "#8172B2"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _client_parts(clients: list[Data]) -> dict[str, float]:
    return {"download": mean(c["t_down_s"] for c in clients), "compute": mean(c["t_compute_s"] for c in clients),
            "upload": mean(c["t_up_s"] for c in clients), "framework": mean(c["t_framework_s"] for c in clients)}


def _stacked_barh(ax: Any, labels: list[str], parts: list[dict[str, float]]) -> None:
    left = [0.0] * len(labels)
    for part, color in PARTS.items():
        values = [p[part] for p in parts]
        ax.barh(labels, values, left=left, color=color, label=part)
        left = [a + b for a, b in zip(left, values)]
    for i, total in enumerate(left):
        ax.text(total, i, f" {total:.3g} s", va="center", fontsize=8)
    ax.set_xlim(0, max(left) * 1.2 if left and max(left) > 0 else 1)
    ax.invert_yaxis()


def plot_run(data: Data, fig: Any) -> None:
    """Left: a client's round by link profile; right: each round's time (communication solid) and accuracy."""
    left, right = fig.subplots(1, 2)
    groups: dict[str, list[Data]] = defaultdict(list)
    for c in data["clients"]:
        if not c.get("dropped"):
            groups[c["profile"]].append(c)
    names = sorted(groups, key=lambda p: -mean(c["t_total_s"] for c in groups[p]))
    _stacked_barh(left, names, [_client_parts(groups[n]) for n in names])
    left.set_xlabel("seconds per client and round (mean)")
    left.set_title("where a client's round goes")
    left.legend(fontsize=7, loc="lower right")
    rounds = data["rounds"]
    xs = [r["round"] for r in rounds]
    comm = [r["comm_time_s"] for r in rounds]
    right.bar(xs, comm, color=PARTS["upload"], label="communication (critical path)")
    right.bar(xs, [r["round_time_s"] - r["comm_time_s"] for r in rounds], bottom=comm, color="#cccccc",
              label="compute + framework")
    right.set_xlabel("round")
    right.set_ylabel("round time (s)")
    right.set_xticks(xs)
    right.legend(fontsize=7, loc="lower left")
    accs = [(r["round"], r["accuracy"]) for r in rounds if r.get("accuracy") is not None]
    if accs:
        twin = right.twinx()
        twin.plot(*zip(*accs), "k.-", label="accuracy")
        twin.set_ylim(0, 1)
        twin.set_ylabel("accuracy (server, held-out)")
    right.set_title(f"rounds ({data.get('engine', '?')})")


def plot_heterogeneous(data: Data, fig: Any) -> None:
    """Each client's steady round as emulated (bars) and as the model predicts for the same links (×)."""
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    ids = {r["round"] for r in steady(data["rounds"])}
    factors = {s["client"]: s["link_factor"] for s in (data["config"].get("faults") or {}).get("stragglers", [])}
    by: dict[int, list[Data]] = defaultdict(list)
    for c in data["clients"]:
        if c["round"] in ids and not c.get("dropped"):
            by[c["client_id"]].append(c)
    est: dict[int, list[float]] = defaultdict(list)
    for c in data["model"]["with_stragglers"]["clients"]:
        if c["round"] in ids:
            est[c["client_id"]].append(c["t_total_s"])
    cids = sorted(by)
    labels = [f"{cid} {by[cid][0]['profile']}" + (f" ×{factors[cid]:g}" if cid in factors else "") for cid in cids]
    _stacked_barh(left, labels, [_client_parts(by[cid]) for cid in cids])
    predicted = [mean(est[cid]) for cid in cids]
    left.plot(predicted, range(len(cids)), "kx", markersize=9, label="estimate, same links")
    left.set_xlim(0, max(left.get_xlim()[1], 1.1 * max(predicted, default=0.0)))
    left.set_xlabel("seconds per round (emulated, mean of the steady rounds)")
    left.set_title("clients (×f: straggler at f × its link)")
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=5)
    rounds = data["rounds"]
    series = {"emulate": {r["round"]: r["round_time_s"] for r in rounds},
              "estimate, same links": {r["round"]: r["round_time_s"] for r in data["model"]["with_stragglers"]["rounds"]},
              "estimate, no stragglers": {r["round"]: r["round_time_s"] for r in data["model"]["no_stragglers"]["rounds"]}}
    xs = [r["round"] for r in rounds]
    for i, (name, values) in enumerate(series.items()):
        right.bar([x + (i - 1) * 0.27 for x in xs], [values.get(x, 0.0) for x in xs], 0.25, label=name)
    for r in rounds:
        if r.get("host_bound"):
            right.annotate("◆ host-bound", (r["round"] - 0.27, r["round_time_s"]), ha="center", va="bottom", fontsize=7)
    right.set_xticks(xs)
    right.set_xlabel("round")
    right.set_ylabel("round time (s)")
    right.set_title("rounds")
    right.legend(fontsize=7, loc="lower left")


def plot_datacenter(data: Data, fig: Any) -> None:
    """Log scale: one client's communication per FL round on each profile, one AllReduce per fabric."""
    ax = fig.subplots()
    models = data["models"]
    profiles = [p["profile"] for p in models[0]["profiles"]]
    fabrics = [f["fabric"] for f in models[0]["fabrics"]]
    series = [(f"FL comm, {p}", lambda m, p=p: next(x["t_down_s"] + x["t_up_s"] for x in m["profiles"]
                                                     if x["profile"] == p)) for p in profiles]
    series += [(f"AllReduce, {f}", lambda m, f=f: next(x["time_s"] for x in m["fabrics"] if x["fabric"] == f))
               for f in fabrics]
    width = 0.8 / len(series)
    warm, cool = _pyplot().get_cmap("Reds"), _pyplot().get_cmap("Blues")
    for i, (label, value) in enumerate(series):
        color = warm(0.45 + 0.4 * i / max(1, len(profiles) - 1)) if i < len(profiles) else \
            cool(0.9 - 0.5 * (i - len(profiles)) / max(1, len(fabrics) - 1))
        ax.bar([k + (i - (len(series) - 1) / 2) * width for k in range(len(models))], [value(m) for m in models],
               width * 0.95, label=label, color=color)
    ax.set_yscale("log")
    ax.set_xticks(range(len(models)), [m["model"] for m in models])
    ax.set_ylabel("seconds (log scale)")
    ax.set_title("one FL round's communication (one client) vs one AllReduce of the same gradient")
    ax.legend(fontsize=7, ncol=2)


def plot_compression(data: Data, fig: Any) -> None:
    up, acc, big = fig.subplots(1, 3)
    rows, first, last = study_rows(data), data["profiles"][0], data["profiles"][-1]
    variants = [v["name"] for v in data["variants"]]
    sent = [rows[(v, first)]["bytes_up_per_client"] for v in variants]
    up.bar(variants, sent, color=PARTS["upload"])
    up.set_yscale("log")
    up.set_ylim(bottom=min(sent) / 4)  # the smallest bar stays visible on the log scale
    up.set_ylabel("bytes up per client and round (log)")
    up.set_title("measured upload")
    acc.bar(variants, [rows[(v, first)].get("accuracy") or 0.0 for v in variants], color=PARTS["compute"])
    acc.set_ylim(0, 1)
    acc.set_ylabel("accuracy after the last round")
    acc.set_title("accuracy (server, held-out)")
    estimates = data.get("estimates") or []
    if estimates:
        model = estimates[-1]["model"]
        rows_m = [e for e in estimates if e["model"] == model]
        names = [e["variant"] for e in rows_m]
        for i, prof in enumerate((first, last)):
            values = [next(p["round_time_s"] for p in e["profiles"] if p["profile"] == prof) for e in rows_m]
            big.bar([k + (i - 0.5) * 0.4 for k in range(len(names))], values, 0.38, label=prof)
        big.set_xticks(range(len(names)), names)
        big.set_ylabel("round time (s, estimate)")
        big.set_title(f"{model}: round time per codec")
        big.legend(fontsize=7)
    for ax in (up, acc, big):
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)


def plot_local_steps(data: Data, fig: Any) -> None:
    by_round, by_time = fig.subplots(1, 2)
    target = data.get("target_accuracy")
    for name, curve in (data.get("curves") or {}).items():
        points = [p for p in curve if p.get("accuracy") is not None]
        elapsed, times = 0.0, []
        for p in curve:
            elapsed += p["round_time_s"]
            if p.get("accuracy") is not None:
                times.append(elapsed)
        by_round.plot([p["round"] for p in points], [p["accuracy"] for p in points], ".-", label=name)
        by_time.plot(times, [p["accuracy"] for p in points], ".-", label=name)
    for ax in (by_round, by_time):
        ax.set_ylim(0, 1)
        ax.set_ylabel("accuracy (server, held-out)")
        if target is not None:
            ax.axhline(target, color="grey", linestyle=":", linewidth=1)
        ax.legend(fontsize=7, loc="lower right")
    by_round.set_xlabel("round")
    by_round.set_title("accuracy per round")
    by_time.set_xlabel(f"round clock (s), clients on {data.get('curve_profile', '?')}")
    by_time.set_title("accuracy against time")


def plot_deadlines(data: Data, fig: Any) -> None:
    """Accuracy against the round clock per round policy, one thin line per seed (left); each policy's rounds,
    every seed's pooled (right)."""
    by_time, rounds_ax = fig.subplots(1, 2)
    target = data.get("target_accuracy")
    names, pooled = [], []
    colours = iter(plt_colours())
    for p in data["policies"]:
        done = [r for r in p["runs"] if r["rounds"]]  # a failed run has no rounds to draw
        if not done:
            continue
        colour = next(colours)
        for i, run in enumerate(done):
            elapsed, times, acc = 0.0, [], []
            for r in run["rounds"]:
                elapsed += r["round_time_s"]
                if r.get("accuracy") is not None:
                    times.append(elapsed / 60)
                    acc.append(r["accuracy"])
            by_time.plot(times, acc, "-", color=colour, linewidth=0.9, alpha=0.75,
                         label=f"{p['policy']} ({len(done)} seeds)" if i == 0 else None)
        names.append(p["policy"])
        pooled.append([r["round_time_s"] for run in done for r in run["rounds"]])
    if target is not None:
        by_time.axhline(target, color="grey", linestyle=":", linewidth=1)
    by_time.set_ylim(0, 1)
    by_time.set_xlabel("round clock (min)")
    by_time.set_ylabel("accuracy (server, held-out)")
    by_time.set_title("accuracy against time, per round policy and seed")
    by_time.legend(fontsize=7, loc="lower right")
    rounds_ax.boxplot(pooled, showfliers=True)
    rounds_ax.set_xticks(range(1, len(names) + 1), names)
    rounds_ax.tick_params(axis="x", labelrotation=20, labelsize=7)
    rounds_ax.set_ylabel("round time (s)")
    rounds_ax.set_title("rounds per policy, all seeds\n(the tall ones: a dropout's heartbeat wait)")


def plt_colours() -> list[str]:
    """Matplotlib's default colour cycle (one colour per policy, shared by its seeds)."""
    import matplotlib.pyplot as plt

    return plt.rcParams["axes.prop_cycle"].by_key()["color"]


#: experiment → (its result file under benchmarks/results/, the function that draws it, figure size)
FIGURES: dict[str, tuple[str, Callable[[Data, Any], None], tuple[float, float]]] = {
    "quickstart": ("experiments/quickstart.json", plot_run, (11, 4)),
    "uplink-profiles": ("experiments/uplink-profiles.json", plot_run, (11, 4)),
    "heterogeneous-clients": ("experiments/heterogeneous-clients.json", plot_heterogeneous, (12, 4.5)),
    "datacenter-vs-federated": ("experiments/datacenter-vs-federated.json", plot_datacenter, (11, 4.5)),
    "compression": ("experiments/compression.json", plot_compression, (13, 4.2)),
    "local-steps": ("experiments/local-steps.json", plot_local_steps, (11, 4.2)),
    "deadlines": ("experiments/deadlines.json", plot_deadlines, (12, 4.5)),
}


def data_sha256(root: Path, name: str) -> str:
    return hashlib.sha256((root / RESULTS / FIGURES[name][0]).read_bytes()).hexdigest()


def draw(root: Path, name: str, out: Path) -> Path:
    """Draw experiment ``name``'s figure from its committed JSON into ``out`` (PNG)."""
    result, fn, size = FIGURES[name]
    data = json.loads((root / RESULTS / result).read_text(encoding="utf-8"))
    plt = _pyplot()
    fig = plt.figure(figsize=size)
    try:
        fn(data, fig)
        fig.tight_layout()
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=100, metadata={SHA_KEY: data_sha256(root, name), "Source": f"{RESULTS / result}"})
    finally:
        plt.close(fig)
    return out
