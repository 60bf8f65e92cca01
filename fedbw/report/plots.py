"""Plots a person would rather look at than read: where each profile's round time goes, and how
rounds, communication share and accuracy evolve; for `fedbw report`, the same questions across runs
(time to accuracy, bytes per stage, privacy's cost, FL round vs AllReduce, the links' byte series).

Written next to the records (PNG), from records alone, so `fedbw report` can redraw any run. Every
figure has a title and units on its axes; the sentence that says what it shows is the page's (html.py).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING, Sequence

from fedbw.netmodel.timeline import BANDWIDTH_BOUND_FRACTION
from fedbw.results.host_record import HOST_BOUND_SHARE
from fedbw.results.records import ClientRoundRecord, RoundRecord

if TYPE_CHECKING:
    from fedbw.results.compared import ComparedRun
    from fedbw.shaper.series import LinkSeries

COLORS = {"download": "#4C72B0", "compute": "#55A868", "upload": "#C44E52", "framework": "#8172B2"}
DPI = 110


def wrap_label(text: str, width: int = 28) -> str:
    """A run's label on lines of about ``width`` characters, broken at its " · " separators (then at spaces),
    so a long sweep label does not squeeze the axes it names."""
    import textwrap

    lines: list[str] = []
    for part in text.split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " · " + part
        else:
            lines.extend(textwrap.wrap(part, width) or [part])
    return "\n".join(lines)


def _row_inches(labels: Sequence[str], per_line: float = 0.22, per_row: float = 0.38) -> float:
    """Figure height for horizontal bars with these (wrapped) labels."""
    return sum(per_row + per_line * (label.count("\n") + 1) for label in labels)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_breakdown(clients: Sequence[ClientRoundRecord], path: Path, title: str) -> Path | None:
    """Stacked horizontal bars: mean download / compute / upload / framework time per link profile."""
    groups: dict[str, list[ClientRoundRecord]] = defaultdict(list)
    for c in clients:
        if not c.dropped:
            groups[c.profile].append(c)
    return plot_grouped_breakdown(groups, path, title)


def plot_grouped_breakdown(groups: dict[str, list[ClientRoundRecord]], path: Path, title: str) -> Path | None:
    """One stacked bar per group (a profile, or a run's profile), slowest first, each labelled with its
    total and its communication share."""
    groups = {k: v for k, v in groups.items() if v}
    if not groups:
        return None
    plt = _pyplot()
    names = sorted(groups, key=lambda n: -mean(c.t_total_s for c in groups[n]))
    parts = {
        "download": [mean(c.t_down_s for c in groups[n]) for n in names],
        "compute": [mean(c.t_compute_s for c in groups[n]) for n in names],
        "upload": [mean(c.t_up_s for c in groups[n]) for n in names],
        "framework": [mean(c.t_framework_s for c in groups[n]) for n in names],
    }
    shown = [wrap_label(n) for n in names]
    fig, ax = plt.subplots(figsize=(8, _row_inches(shown) + 1.4))
    left = [0.0] * len(names)
    for label, values in parts.items():
        if not any(values):
            continue
        ax.barh(shown, values, left=left, color=COLORS[label], label=label)
        left = [a + b for a, b in zip(left, values)]
    for i, total in enumerate(left):
        comm = parts["download"][i] + parts["upload"][i]
        ax.text(total, i, f"  {total:.3g} s · {100 * comm / total if total else 0:.0f} % comm", va="center",
                fontsize=9)
    ax.set_xlabel("seconds per client and round (mean)")
    ax.set_title(title)
    ax.set_xlim(0, max(left) * 1.35 if max(left) > 0 else 1)
    _legend_below(ax)
    ax.invert_yaxis()
    return _save(plt, fig, path)


def _save(plt, fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, bbox_inches="tight")  # "tight": legends below the axes stay in the picture
    plt.close(fig)
    return path


def _legend_below(ax, ncol: int = 5, **kw) -> None:
    """A legend under the x-axis label, where it never hides a bar or its label."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14 if ax.get_xlabel() else -0.06), ncol=ncol,
              fontsize=8, frameon=False, **kw)


def plot_rounds(rounds: Sequence[RoundRecord], path: Path, title: str) -> Path | None:
    """Round time split into communication and the rest, with accuracy on a second axis."""
    if not rounds:
        return None
    plt = _pyplot()
    xs = [r.round for r in rounds]
    comm = [r.comm_time_s for r in rounds]
    rest = [max(r.round_time_s - r.comm_time_s, 0.0) for r in rounds]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(xs, comm, color=COLORS["upload"], label="communication (critical path)")
    ax.bar(xs, rest, bottom=comm, color=COLORS["compute"], label="compute + framework")
    hosted = [r for r in rounds if r.host is not None]
    if hosted:
        # the host's share, hatched on top of each emulated bar; host-bound rounds marked above it
        lost = [r.host.lost_s if r.host is not None else 0.0 for r in rounds]
        ax.bar(xs, lost, bottom=[c + o - h for c, o, h in zip(comm, rest, lost)], fill=False, hatch="//",
               edgecolor="black", linewidth=0, label="held by the host, not the links")
        for r in hosted:
            if r.host is not None and r.host.bound:
                ax.annotate("host-bound", (r.round, r.round_time_s), ha="center", va="bottom", fontsize=7,
                            color="darkorange")
    ax.set_xlabel("round")
    ax.set_ylabel("round time (s)")
    ax.set_xticks(xs)
    ax.set_title(title)
    if any(r.accuracy is not None for r in rounds):
        ax2 = ax.twinx()
        acc = [(r.round, 100 * r.accuracy) for r in rounds if r.accuracy is not None]
        ax2.plot([a for a, _ in acc], [b for _, b in acc], "o-", color="black", label="accuracy")
        ax2.set_ylabel("test accuracy (%)")
        ax2.set_ylim(0, 100)
        ax2.legend(loc="upper right", fontsize=8)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_run(run_dir: Path, clients: Sequence[ClientRoundRecord], rounds: Sequence[RoundRecord],
             title: str) -> list[Path]:
    out = [plot_breakdown(clients, run_dir / "breakdown.png", f"{title}: where a client's round goes"),
           plot_rounds(rounds, run_dir / "rounds.png", f"{title}: rounds")]
    return [p for p in out if p is not None]


# ------------------------------------------------------------------- `fedbw report`: runs side by side

def breakdown_groups(runs: Sequence["ComparedRun"]) -> dict[str, list[ClientRoundRecord]]:
    """Live client records by run and profile ("home-30" alone when the run's label already says it)."""
    groups: dict[str, list[ClientRoundRecord]] = defaultdict(list)
    for r in runs:
        for c in r.clients:
            if not c.dropped:
                alone = len(runs) == 1 or (len(r.summary.profiles) == 1 and c.profile in r.label)
                groups[c.profile if len(runs) == 1 else (r.label if alone else f"{r.label} · {c.profile}")].append(c)
    return groups


def plot_time_to_accuracy(runs: Sequence["ComparedRun"], target: float | None, path: Path) -> Path | None:
    """Test accuracy after each round against the network-clock time elapsed: one line per run."""
    curves = [(r.label, r.summary.accuracy_curve) for r in runs if r.summary.accuracy_curve]
    if not curves:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for label, curve in curves:
        ax.plot([0.0] + [t for _, t, _ in curve], [None] + [100 * a for _, _, a in curve], "o-",
                label=wrap_label(label, 60))
    if target is not None:
        ax.axhline(100 * target, color="grey", linestyle="--", linewidth=1)
        ax.annotate(f"target {100 * target:.0f} %", (0, 100 * target), xytext=(4, 3), textcoords="offset points",
                    fontsize=8, color="grey")
    ax.set_xlabel("time on the network clock (s, rounds added up)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_xlim(left=0)
    ax.set_title("Accuracy against time, per run")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    return _save(plt, fig, path)


def plot_bytes_by_stage(runs: Sequence["ComparedRun"], path: Path) -> Path | None:
    """Mean bytes per client and round, by stage and direction; one bar per run (or one for all runs when
    they all moved the same bytes)."""
    rows = [(r.label, r.summary.bytes_by_stage) for r in runs if r.summary.bytes_by_stage]
    if not rows:
        return None
    if all(b == rows[0][1] for _, b in rows):
        rows = [("every run" if len(rows) > 1 else rows[0][0], rows[0][1])]
    plt = _pyplot()
    stages = list(dict.fromkeys(s for _, b in rows for s in b))
    rows = [(wrap_label(label, 24), b) for label, b in rows]
    fig, axes = plt.subplots(1, 2, figsize=(9, _row_inches([label for label, _ in rows]) + 1.6), sharey=True)
    palette = plt.get_cmap("tab10")
    for ax, direction in zip(axes, ("up", "down")):
        left = [0.0] * len(rows)
        for k, stage in enumerate(stages):
            values = [b.get(stage, {}).get(direction, 0.0) / 1e6 for _, b in rows]
            ax.barh([label for label, _ in rows], values, left=left, color=palette(k % 10), label=stage)
            left = [a + v for a, v in zip(left, values)]
        for i, total in enumerate(left):
            ax.text(total, i, f" {total:.3g} MB", va="center", fontsize=8)
        ax.set_xlim(0, max(left) * 1.3 if max(left) > 0 else 1)
        ax.set_xlabel(f"MB {'uploaded' if direction == 'up' else 'downloaded'} per client and round")
        ax.set_title("upload" if direction == "up" else "download")
    axes[0].invert_yaxis()
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(stages), fontsize=8,
               frameon=False, title="stage of the round", title_fontsize=8)
    fig.suptitle("Bytes per client and round, by stage")
    return _save(plt, fig, path)


def plot_privacy_overhead(runs: Sequence["ComparedRun"], path: Path) -> Path | None:
    """Mean round time per run split into communication / compute / framework, labelled by privacy
    setting, with each run's ratio to the fastest; None when every run has the same privacy setting."""
    if len({r.privacy for r in runs}) < 2:
        return None
    plt = _pyplot()
    labels = [wrap_label(r.label) + (f"\n({r.privacy})" if r.privacy not in r.label else "") for r in runs]
    comm = [r.summary.mean_comm_s for r in runs]
    compute = [r.summary.mean_compute_s for r in runs]
    frame = [r.summary.mean_framework_s for r in runs]
    fig, ax = plt.subplots(figsize=(8, _row_inches(labels) + 1.4))
    ax.barh(labels, comm, color=COLORS["upload"], label="communication")
    ax.barh(labels, compute, left=comm, color=COLORS["compute"], label="compute")
    ax.barh(labels, frame, left=[a + b for a, b in zip(comm, compute)], color=COLORS["framework"],
            label="framework")
    fastest = min(r.summary.mean_round_time_s for r in runs) or 1.0
    for i, r in enumerate(runs):
        ax.text(r.summary.mean_round_time_s, i, f"  {r.summary.mean_round_time_s:.3g} s "
                f"({r.summary.mean_round_time_s / fastest:.2f}×)", va="center", fontsize=9)
    ax.set_xlim(0, max(r.summary.mean_round_time_s for r in runs) * 1.35 or 1)
    ax.set_xlabel("mean round time (s), on its critical path")
    ax.set_title("What privacy costs: round time per privacy setting")
    _legend_below(ax)
    ax.invert_yaxis()
    return _save(plt, fig, path)


def plot_fabrics(runs: Sequence["ComparedRun"], path: Path) -> Path | None:
    """Each run's mean FL round beside one AllReduce of its model on each fabric, on a log scale."""
    rows: list[tuple[str, float, str]] = []
    seen: set[tuple[str, int, float]] = set()
    for r in runs:
        rows.append((wrap_label(f"FL round: {r.label}", 34), r.summary.mean_round_time_s, COLORS["upload"]))
    for r in runs:
        for f in r.fabrics:
            if (f.fabric, f.ranks, round(f.allreduce_s, 15)) not in seen:
                seen.add((f.fabric, f.ranks, round(f.allreduce_s, 15)))
                rows.append((f"AllReduce: {f.fabric} ({f.ranks} ranks)", f.allreduce_s, COLORS["download"]))
    if not any(r.fabrics for r in runs) or not all(v > 0 for _, v, _ in rows):
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, _row_inches([n for n, _, _ in rows], per_row=0.25) + 1.4))
    ax.barh([n for n, _, _ in rows], [v for _, v, _ in rows], color=[c for _, _, c in rows])
    ax.set_xscale("log")
    for i, (_, v, _) in enumerate(rows):
        ax.text(v, i, f" {_seconds(v)}", va="center", fontsize=8)
    lo, hi = min(v for _, v, _ in rows), max(v for _, v, _ in rows)
    ax.set_xlim(lo / 3, hi * 30)
    ax.set_xlabel("seconds (log scale: each grid line is 10×)")
    ax.set_title("One federated round vs one AllReduce of the same gradient")
    ax.grid(axis="x", alpha=0.3, which="major")
    ax.invert_yaxis()
    return _save(plt, fig, path)


def _seconds(v: float) -> str:
    from fedbw.report.format import fmt_s

    return fmt_s(v)


def plot_comm_share(runs: Sequence["ComparedRun"], path: Path) -> Path | None:
    """Each run's mean communication share (bars; each round a dot) against the 30 % bandwidth-bound line."""
    if not runs:
        return None
    plt = _pyplot()
    labels = [wrap_label(r.label) for r in runs]
    fig, ax = plt.subplots(figsize=(8, _row_inches(labels) + 1.6))
    shares = [100 * r.summary.mean_comm_fraction for r in runs]
    line = 100 * BANDWIDTH_BOUND_FRACTION
    ax.barh(labels, shares, color=[COLORS["upload"] if s > line else "#999999" for s in shares])
    for i, r in enumerate(runs):
        dots = [100 * x.comm_fraction for x in r.rounds]
        ax.plot(dots, [i] * len(r.rounds), "k.", markersize=4)
        ax.text(max([shares[i], *dots]), i, f"  {shares[i]:.0f} %", va="center", fontsize=9)
    ax.axvline(line, color="black", linestyle="--", linewidth=1)
    ax.annotate("30 %: above it a round is bandwidth-bound", (line, len(runs) - 0.5), xytext=(4, 0),
                textcoords="offset points", fontsize=8, va="bottom")
    ax.set_xlim(0, 100)
    ax.set_xlabel("communication share of the round (%, critical path); dots: single rounds")
    ax.set_title("How much of a round is communication")
    ax.invert_yaxis()
    return _save(plt, fig, path)


def plot_link_series(series: "LinkSeries", path: Path, title: str, max_points: int = 1500) -> Path | None:
    """Bytes delivered through each emulated client's link over time: upload solid, download dashed."""
    lines = {k: v for k, v in series.series.items() if len(v) > 1}
    if not lines:
        return None
    plt = _pyplot()
    t0 = min(v[0].t_s for v in series.series.values())
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    palette = plt.get_cmap("tab10")
    clients = sorted({c for c, _ in lines}, key=lambda c: (len(c), c))
    for (cid, direction), samples in sorted(lines.items()):
        step = max(1, len(samples) // max_points)
        picked = samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else [])
        ax.step([s.t_s - t0 for s in picked], [s.bytes_out / 1e6 for s in picked], where="post",
                color=palette(clients.index(cid) % 10), linestyle="-" if direction == "up" else "--",
                label=f"client {cid} {direction}")
    ax.set_xlabel("time since the shaper started (s)")
    ax.set_ylabel("MB delivered through the link (cumulative)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    ax.grid(alpha=0.3)
    return _save(plt, fig, path)


def plot_host_share(runs: Sequence["ComparedRun"], path: Path) -> Path | None:
    """Per round, the share of an emulated round the host (not the links) held, against the 5 % line."""
    hosted = [(r.label, [(x.round, 100 * x.host.share) for x in r.rounds if x.host is not None]) for r in runs]
    hosted = [(label, pts) for label, pts in hosted if pts]
    if not hosted:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    for label, pts in hosted:
        ax.plot([a for a, _ in pts], [b for _, b in pts], "o-", label=wrap_label(label, 60))
    ax.axhline(100 * HOST_BOUND_SHARE, color="darkorange", linestyle="--", linewidth=1)
    ax.annotate(f"{100 * HOST_BOUND_SHARE:.0f} %: at or above it the round is host-bound", (1, 100 * HOST_BOUND_SHARE),
                xytext=(4, 3), textcoords="offset points", fontsize=8, color="darkorange")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # rounds are whole numbers
    ax.set_xlabel("round")
    ax.set_ylabel("share of the round held by the host (%)")
    ax.set_ylim(bottom=0)
    ax.set_title("Emulation: time the host, not the links, held")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(plt, fig, path)
