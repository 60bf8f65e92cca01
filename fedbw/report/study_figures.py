"""A grid study's figures, drawn from a finished study or from its committed study.json alone.

Two figures a person reads before the table: the overhead of every variant against the baseline of its own
cell (:func:`plot_grid`), and, for studies that trained for real, accuracy and ε along the grid's numeric
setting (:func:`plot_accuracy`). The figures of docs/privacy-overhead.md are drawn from the committed JSON
(:data:`DOC_FIGURES`) and stamped with its SHA-256, so ``fedbw docs --check`` notices a figure that no
longer matches its data.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from fedbw.report.doc_blocks import RESULTS
from fedbw.results.study import StudyRow

if TYPE_CHECKING:
    from fedbw.results.study import StudyResult

SHA_KEY = "fedbw-data-sha256"


@dataclass(frozen=True)
class StudyView:
    """What the figures need of a study: its name, grid, profiles, baseline and rows."""

    name: str
    grid: dict[str, list[Any]]
    profiles: list[str]
    baseline: str
    rows: list[StudyRow]

    @classmethod
    def of(cls, res: StudyResult) -> StudyView:
        s = res.study
        return cls(s.name, s.grid, s.profiles, s.baseline, res.rows)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StudyView:
        """A study.json's view (keys a newer file adds to a row are ignored)."""
        known = {f.name for f in fields(StudyRow)}
        rows = [StudyRow(**{k: v for k, v in r.items() if k in known}) for r in data["rows"]]
        return cls(data["study"], data.get("grid") or {}, data["profiles"], data.get("baseline", "plain"), rows)


def plot_bars(view: StudyView, path: Path, metadata: dict[str, str] | None = None) -> Path:
    """Grouped bars, one group per profile, one bar per variant, communication below compute and Flower's
    framework (a study without a grid)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles, variants = view.profiles, list(dict.fromkeys(r.variant for r in view.rows))
    by = {(r.variant, r.profile): r for r in view.rows}
    width = 0.8 / len(variants)
    cmap = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(profiles) * len(variants) / 2), 4.2))
    for i, v in enumerate(variants):
        xs = [p + (i - (len(variants) - 1) / 2) * width for p in range(len(profiles))]
        comm = [by[(v, p)].comm_time_s for p in profiles]
        rest = [by[(v, p)].round_time_s - by[(v, p)].comm_time_s for p in profiles]
        ax.bar(xs, comm, width * 0.95, color=cmap(i), label=v)
        ax.bar(xs, rest, width * 0.95, bottom=comm, color=cmap(i), alpha=0.35, hatch="//", edgecolor="white")
    ax.set_xticks(range(len(profiles)), profiles)
    ax.set_ylabel("round time (s)")
    ax.set_xlabel("solid: communication · hatched: compute and Flower's framework (critical path)")
    ax.set_title(f"{view.name}: steady-state round time per variant and profile")
    ax.legend(fontsize="small", ncol=min(len(variants), 3))
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata=metadata)
    plt.close(fig)
    return path


def _numeric_axis(grid: dict[str, list[Any]]) -> str | None:
    """The grid's first setting whose values are all numbers (the x axis of the grid's figure)."""
    return next((k for k, vs in grid.items()
                 if len(vs) > 1 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vs)), None)


def plot_grid(view: StudyView, path: Path, metadata: dict[str, str] | None = None) -> Path:
    """The overhead a person reads before the table: each variant's round time against the baseline's in the
    same cell (solid) and its uplink bytes against the baseline's (dashed), along the grid's first numeric
    setting (e.g. clients per round); one panel per combination of the other settings (e.g. the model) and
    profile."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = view.grid
    x_key = _numeric_axis(grid)
    others = [k for k in grid if k != x_key]
    present = {tuple(r.cell.get(k) for k in others) for r in view.rows}
    groups = [g for g in itertools.product(*(grid[k] for k in others)) if g in present]  # the file's order
    profiles = view.profiles
    kinds = [k for k in dict.fromkeys(r.variant_kind for r in view.rows) if k != view.baseline]
    ratios = [v for r in view.rows for v in (r.round_ratio, r.uplink_ratio) if v is not None and v > 0]
    wide = bool(ratios) and max(ratios) / min(ratios) > 20
    fig, axes = plt.subplots(len(groups), len(profiles), figsize=(3.4 * len(profiles), 2.8 * len(groups)),
                             squeeze=False, sharey=True)
    cmap = plt.get_cmap("tab10")
    for gi, group in enumerate(groups):
        for pi, profile in enumerate(profiles):
            ax = axes[gi][pi]
            for ki, kind in enumerate(kinds):
                rows = [r for r in view.rows if r.variant_kind == kind and r.profile == profile
                        and tuple(r.cell.get(k) for k in others) == group]
                rows.sort(key=lambda r: r.cell.get(x_key, 0) if x_key else 0)
                xs = [r.cell.get(x_key) if x_key else i for i, r in enumerate(rows)]
                ax.plot(xs, [r.round_ratio for r in rows], "-o", color=cmap(ki), ms=3, label=f"{kind}: round")
                ax.plot(xs, [r.uplink_ratio for r in rows], "--", color=cmap(ki), alpha=0.6, label=f"{kind}: up bytes")
            if x_key:
                if max(grid[x_key]) / max(min(grid[x_key]), 1e-12) >= 10:
                    ax.set_xscale("log")
                ax.set_xticks(grid[x_key], [f"{v:g}" for v in grid[x_key]])
                ax.minorticks_off()
            ax.axhline(1.0, color="grey", lw=0.8)
            if wide:  # one variant thousands of times plain (all-n shares) would flatten every other line
                ax.set_yscale("log")
            ax.set_title(", ".join([profile, *(f"{v}" for v in group)]), fontsize="small")
            if gi == len(groups) - 1:
                ax.set_xlabel(x_key or "cell")
            if pi == 0:
                ax.set_ylabel(f"× {view.baseline}" + (" (log)" if wide else ""))
    axes[0][0].legend(fontsize="x-small")
    fig.suptitle(f"{view.name}: overhead against {view.baseline} (solid: round time, dashed: uplink bytes)",
                 fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata=metadata)
    plt.close(fig)
    return path


def has_accuracy_curve(view: StudyView) -> bool:
    """A grid study whose runs trained for real (every row has an accuracy) and that has a numeric axis."""
    return bool(view.grid) and _numeric_axis(view.grid) is not None and bool(view.rows) \
        and all(r.accuracy is not None for r in view.rows)


def plot_accuracy(view: StudyView, path: Path, metadata: dict[str, str] | None = None) -> Path:
    """Accuracy after the last round against the grid's numeric setting (e.g. clients per round), one line
    per variant, each point labelled with its ε: the trade a person reads before the table (accuracy does
    not depend on the profile a round is re-timed on, so each run counts once)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = view.grid
    x_key = _numeric_axis(grid)
    others = [k for k in grid if k != x_key]
    first = view.profiles[0]
    rows = [r for r in view.rows if r.profile == first]
    groups = list(dict.fromkeys(tuple(r.cell.get(k) for k in others) for r in rows))
    kinds = list(dict.fromkeys(r.variant_kind for r in rows))
    fig, axes = plt.subplots(1, len(groups), figsize=(6.4 * len(groups), 4.2), squeeze=False, sharey=True)
    cmap = plt.get_cmap("tab10")
    for gi, group in enumerate(groups):
        ax = axes[0][gi]
        for ki, kind in enumerate(kinds):
            line = sorted((r for r in rows if r.variant_kind == kind and tuple(r.cell.get(k) for k in others) == group),
                          key=lambda r: r.cell[x_key])
            xs, ys = [r.cell[x_key] for r in line], [r.accuracy for r in line]
            ax.plot(xs, ys, "-o", color=cmap(ki), ms=4, label=kind)
            for r, x, y in zip(line, xs, ys):
                if r.epsilon is not None:
                    ax.annotate(f"ε {r.epsilon:.3g}", (x, y), textcoords="offset points",
                                xytext=(4, -12 - 10 * ki), fontsize="x-small", color=cmap(ki))  # one line each
        if max(grid[x_key]) / max(min(grid[x_key]), 1e-12) >= 10:
            ax.set_xscale("log")
        ax.set_xticks(grid[x_key], [f"{v:g}" for v in grid[x_key]])
        ax.minorticks_off()
        ax.set_xlabel(x_key)
        ax.margins(x=0.12, y=0.12)  # room for the last point's ε and the lowest one's
        if group:
            ax.set_title(", ".join(str(v) for v in group), fontsize="small")
    axes[0][0].set_ylabel("accuracy after the last round")
    axes[0][0].legend(fontsize="small")
    fig.suptitle(f"{view.name}: accuracy and ε against {x_key}", fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata=metadata)
    plt.close(fig)
    return path


#: a figure of docs/ (docs/img/<name>.png) → the committed study.json it is drawn from, and how
DOC_FIGURES: dict[str, tuple[str, Callable[[StudyView, Path, dict[str, str]], Path]]] = {
    "privacy-overhead": ("privacy-overhead.json", plot_bars),
    "privacy-at-scale": ("privacy-at-scale.json", plot_grid),
    "dp-cohorts": ("dp-cohorts.json", plot_accuracy),
}


def figure_path(root: Path, name: str) -> Path:
    return root / "docs" / "img" / f"{name}.png"


def _data(root: Path, name: str) -> bytes | None:
    path = root / RESULTS / DOC_FIGURES[name][0]
    return path.read_bytes() if path.is_file() else None


def stale_figures(root: Path) -> list[str]:
    """The doc figures whose PNG is missing or was drawn from other data than the committed JSON (a
    figure without its JSON is not stale: the doc's block says which command writes the data)."""
    from PIL import Image

    out = []
    for name in DOC_FIGURES:
        data = _data(root, name)
        if data is None:
            continue
        png = figure_path(root, name)
        stamp = Image.open(png).text.get(SHA_KEY) if png.is_file() else None
        if stamp != hashlib.sha256(data).hexdigest():
            out.append(name)
    return out


def draw_doc_figure(root: Path, name: str) -> Path:
    """Draw doc figure ``name`` from its committed JSON, stamped with the JSON's SHA-256."""
    result, plot = DOC_FIGURES[name]
    data = _data(root, name)
    if data is None:
        raise FileNotFoundError(root / RESULTS / result)
    out = figure_path(root, name)
    out.parent.mkdir(parents=True, exist_ok=True)
    return plot(StudyView.from_json(json.loads(data)), out,
                {SHA_KEY: hashlib.sha256(data).hexdigest(), "Source": str(RESULTS / result)})
