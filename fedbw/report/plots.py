"""Plots a person would rather look at than read: where each profile's round time goes, and how
rounds, communication share and accuracy evolve.

Written next to the records (PNG), from records alone, so `fedbw report` can redraw any run.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Sequence

from fedbw.results.records import ClientRoundRecord, RoundRecord

COLORS = {"download": "#4C72B0", "compute": "#55A868", "upload": "#C44E52", "framework": "#8172B2"}


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
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(names) + 1.6))
    left = [0.0] * len(names)
    for label, values in parts.items():
        if not any(values):
            continue
        ax.barh(names, values, left=left, color=COLORS[label], label=label)
        left = [a + b for a, b in zip(left, values)]
    for i, total in enumerate(left):
        comm = parts["download"][i] + parts["upload"][i]
        ax.text(total, i, f"  {total:.3g} s · {100 * comm / total if total else 0:.0f} % comm", va="center",
                fontsize=9)
    ax.set_xlabel("seconds per client and round (mean)")
    ax.set_title(title)
    ax.set_xlim(0, max(left) * 1.35 if max(left) > 0 else 1)
    ax.legend(loc="lower right", fontsize=8)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


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
