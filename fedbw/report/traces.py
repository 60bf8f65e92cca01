"""A link-rate trace as a person looks at it: per direction its duration, time-weighted mean, 10th and
90th percentile and a one-line sparkline in the terminal (`fedbw trace show`), and both directions
as steps in a PNG (``--png``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from fedbw.report.format import fmt_s
from fedbw.traces import DIRECTIONS, RateSeries, RateTrace
from fedbw.traces.availability import Availability
from fedbw.traces.synthetic import RateShape

if TYPE_CHECKING:
    from rich.console import Console

#: Eight heights, lowest first; a cell whose rate is 0 (link down) is a space.
BLOCKS = "▁▂▃▄▅▆▇█"
_LABEL = "{:<5} "


def sparkline(series: RateSeries, width: int) -> str:
    """One period of ``series`` in ``width`` cells, each the time-weighted mean rate over its slice of
    the period, scaled to the highest cell (a space where the link is down for the whole slice)."""
    width = max(1, width)
    edges = [series.duration_s * i / width for i in range(width + 1)]
    cells = [series.mean_between(a, b) for a, b in zip(edges, edges[1:])]
    top = max(cells)
    return "".join(_block(v / top) if v > 0.0 else " " for v in cells)


def _block(share: float) -> str:
    """The block for a cell at ``share`` (0, 1] of the top: the lowest block that reaches it."""
    level = math.ceil(share * len(BLOCKS) - 1e-9)  # 1e-9: 0.5 of the top is ▄, not ▅ by rounding
    return BLOCKS[min(len(BLOCKS), max(1, level)) - 1]


def _mbps(value: float) -> str:
    return f"{value:.3g} Mbps" if value < 100 else f"{value:.0f} Mbps"


def direction_summary(series: RateSeries) -> str:
    """``duration 1.0 min · mean 12.3 Mbps · p10 4.1 Mbps · p90 20 Mbps``: the numbers `trace show` prints."""
    return (f"duration {fmt_s(series.duration_s)} · mean {_mbps(series.mean())} · "
            f"p10 {_mbps(series.percentile(10))} · p90 {_mbps(series.percentile(90))}")


def render_trace(console: Console, trace: RateTrace) -> None:
    """What `fedbw trace show` prints: the trace's source, then each direction's numbers and sparkline
    (as wide as the console), the loop it repeats noted once."""
    console.print(f"trace {trace.name} — {trace.source}", markup=False, highlight=False)
    width = console.width - len(_LABEL.format(""))
    for direction in DIRECTIONS:
        series = trace.series(direction)
        console.print(_LABEL.format(direction) + direction_summary(series), markup=False, highlight=False)
        console.print(_LABEL.format("") + sparkline(series, width), markup=False, highlight=False)
    console.print("the trace loops: after its duration it starts again from 0 (sparklines: one loop, "
                  "scaled to each direction's highest rate)", markup=False, highlight=False, style="dim")


def plot_trace(trace: RateTrace, path: Path) -> Path:
    """Both directions' rates over one loop as steps, each with its mean dashed, in ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fedbw.files.atomic import write_error

    fig, axes = plt.subplots(2, 1, figsize=(9, 5), sharex=True)
    for ax, direction, color in zip(axes, DIRECTIONS, ("#C44E52", "#4C72B0")):
        series = trace.series(direction)
        times = [t for t, _ in series.steps] + [series.duration_s]
        rates = [r for _, r in series.steps]
        ax.stairs(rates, times, color=color, linewidth=1.2, label=f"{direction}link")
        ax.axhline(series.mean(), color=color, linestyle="--", linewidth=0.9,
                   label=f"mean {_mbps(series.mean())}")
        ax.set_ylabel(f"{direction} (Mbps)")
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time since the trace's start (s)")
    fig.suptitle(f"{trace.name}: link rate ({trace.format}; the trace loops)")
    fig.tight_layout()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    except OSError as exc:
        raise write_error(path, exc) from None
    finally:
        plt.close(fig)
    return path


def render_availability(console: Console, trace: Availability) -> None:
    """What `fedbw trace availability` prints: the source, the statistics, and the share of clients on line
    over the horizon as a sparkline (as wide as the console)."""
    s = trace.stats()
    console.print(f"availability — {trace.source}", markup=False, highlight=False)
    gap = "-" if s.mean_gap_s is None else fmt_s(s.mean_gap_s)
    console.print(f"{s.clients} clients over {fmt_s(s.horizon_s)} · on line {100 * s.mean_fraction:.0f} % of the "
                  f"time · mean session {fmt_s(s.mean_session_s)} · mean gap {gap}", markup=False, highlight=False)
    console.print(f"share on line: p10 {100 * s.share_p10:.0f} % · p50 {100 * s.share_p50:.0f} % · "
                  f"p90 {100 * s.share_p90:.0f} %", markup=False, highlight=False)
    width = max(1, console.width - len(_LABEL.format("")))
    shares = [trace.online_share(trace.horizon_s * (i + 0.5) / width) for i in range(width)]
    top = max(shares) or 1.0
    console.print(_LABEL.format("on") + "".join(_block(v / top) if v > 0 else " " for v in shares),
                  markup=False, highlight=False)
    console.print("sparkline: the share of clients on line over the horizon, scaled to its highest",
                  markup=False, highlight=False, style="dim")


def render_shape(console: Console, source: RateTrace, shapes: dict[str, RateShape]) -> None:
    """What `fedbw trace generate` measured from ``source``, per direction, in words a reader can check."""
    console.print(f"measured from {source.source}:", markup=False, highlight=False)
    for direction, shape in shapes.items():
        console.print(_LABEL.format(direction) + f"mean {_mbps(shape.mean_mbps)} · log-rate sd {shape.log_sd:.2f} · "
                      f"lag-1 correlation {shape.ac1:.2f} over {shape.step_s:g} s steps (a rate persists ≈ "
                      f"{shape.step_s / (1 - shape.ac1):.1f} s) · out {100 * shape.outage_share:.1f} % of the time, "
                      f"{shape.outage_mean_steps * shape.step_s:.1f} s at a time",
                      markup=False, highlight=False)
