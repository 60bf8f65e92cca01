"""report.html: one self-contained page per run or sweep — what a person opens, reads and shares.

Why one file with everything inside: a page that needs its folder, a web font or a script from the
internet breaks when mailed or opened offline. Every image is a PNG embedded as a data URI (the same
PNGs are also written beside the page), the style sheet is inline, and there is no JavaScript at all.
Every figure has a title, units and a sentence under it saying what it shows and what this data says.
"""

from __future__ import annotations

import base64
import html
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from fedbw.report import plots
from fedbw.report.round_policy import availability_caption, late_caption, shows_used, used_cell
from fedbw.report.format import fmt_bytes, fmt_s, fmt_s_interval
from fedbw.report.terminal import COMPARISON_CAPTION, comparison_rows

if TYPE_CHECKING:
    from fedbw.results.compared import ComparedRun, RunSet

FIGURES_DIR = "figures"
MAX_RUN_FIGURES = 6  #: per-run round charts beyond this many runs are left to each run's own rounds.png
SERIES_FILE = Path("emulate-logs") / "link-series.jsonl"


@dataclass
class Figure:
    title: str
    path: Path
    caption: str


@dataclass
class Report:
    html_path: Path
    figures: list[Figure]


def write_report(runset: "RunSet", out_dir: Path, target: float | None, title: str, command: str) -> Report:
    """Draw every figure the runs have data for into ``out_dir/figures/`` and write ``out_dir/report.html``."""
    out_dir = Path(out_dir)
    fig_dir = out_dir / FIGURES_DIR
    fig_dir.mkdir(parents=True, exist_ok=True)
    runs = runset.runs
    figures = [f for f in _figures(runs, fig_dir, target) if f is not None]
    page = _page(runset, figures, target, title, command)
    html_path = out_dir / "report.html"
    html_path.write_text(page, encoding="utf-8")
    return Report(html_path, figures)


# ------------------------------------------------------------------------------------------ figures

def _figures(runs: Sequence["ComparedRun"], fig_dir: Path, target: float | None) -> list[Figure | None]:
    S = [r.summary for r in runs]
    slow = max(runs, key=lambda r: r.summary.mean_round_time_s)
    out: list[Figure | None] = []
    p = plots.plot_grouped_breakdown(plots.breakdown_groups(runs), fig_dir / "breakdown.png",
                                     "Where a client's round goes, per uplink profile")
    if p:
        part = _dominant(slow)
        out.append(Figure("Round time, split by what it is spent on", p,
                          "Each bar is the mean time one client spends on a round, split into downloading the model, "
                          "training (compute), uploading its update and Flower's own work (framework: polls, "
                          "process start-up, the server). The label after each bar gives the total and how much of "
                          f"it is communication. Here the slowest is {_q(slow.label)}, where {part} takes the "
                          f"largest part."))
    p = plots.plot_time_to_accuracy(runs, target, fig_dir / "time-to-accuracy.png")
    if p:
        out.append(Figure("Accuracy against time", p,
                          "Test accuracy after each round, plotted at the time the round ended on the network "
                          "clock (the rounds' times added up). A curve further left reaches the same accuracy "
                          "sooner: that is what a faster uplink buys. " + _accuracy_sentence(runs, target)))
    p = plots.plot_comm_share(runs, fig_dir / "comm-share.png")
    if p:
        bound = [r.label for r in runs if r.summary.bandwidth_bound]
        verdict = (f"Bandwidth-bound here: {_list(bound)}." if bound else
                   "No run here is bandwidth-bound: the round waits mostly on something other than the links.")
        out.append(Figure("Share of the round spent communicating", p,
                          "The bar is the mean share of a round spent on communication on its critical path "
                          "(the slowest client of each stage); dots are single rounds. Past the dashed 30 % line "
                          f"the links, not the computers, set the pace. {verdict}"))
    p = plots.plot_bytes_by_stage(runs, fig_dir / "bytes-by-stage.png")
    if p:
        same = _within(S, 0.01)
        out.append(Figure("Bytes per client and stage", p,
                          "What one client sends (left) and receives (right) per round, by stage of the round "
                          "(SecAgg+ adds setup, share_keys and unmask stages to the training stage). "
                          + ("Every run moved the same bytes (within 1 %): the runs differ in how fast the bytes move, "
                             "not in how many there are." if same and len(runs) > 1 else
                             _bytes_sentence(runs))))
    p = plots.plot_privacy_overhead(runs, fig_dir / "privacy-overhead.png")
    if p:
        fastest = min(runs, key=lambda r: r.summary.mean_round_time_s)
        out.append(Figure("What privacy costs", p,
                          "Mean round time of each privacy setting, split into communication, compute and "
                          "framework, with its ratio to the fastest run "
                          f"({_q(fastest.label)}, privacy: {fastest.privacy}). SecAgg+ adds stages and bytes; "
                          "DP adds noise (and can rule out compression)."))
    p = plots.plot_fabrics(runs, fig_dir / "fl-vs-allreduce.png")
    if p:
        out.append(Figure("Federated round vs data-center AllReduce", p,
                          "The red bars are the mean federated round; the blue bars one AllReduce of the same "
                          "model's gradient on each data-center fabric (the analytic α-β model, ranks as in the "
                          "config). The axis is logarithmic: each grid line is ten times the last. "
                          + _fabric_sentence(runs)))
    p = plots.plot_host_share(runs, fig_dir / "host-share.png")
    if p:
        n = sum(len(r.summary.host_bound_rounds or []) for r in runs)
        out.append(Figure("Emulation: was the host the bottleneck?", p,
                          "For emulated runs, the share of each round that the emulating machine's CPUs, not the "
                          "shaped links, held (a link idle mid-message, a slow ClientApp start). At or above the "
                          "5 % line the round is host-bound: its figures describe this machine more than the "
                          "network; rerun with --dilation auto. "
                          + (f"{n} round(s) here were host-bound." if n else "No round here was host-bound.")))
    for r in runs:
        series = _series(r)
        if series is not None:
            name = f"link-series-{_slug(r.path.name)}.png"
            p = plots.plot_link_series(series, fig_dir / name, f"Bytes through each emulated link: {r.label}")
            if p:
                out.append(Figure(f"The links' byte series: {r.label}", p,
                                  "Cumulative bytes the link shaper delivered through each client's link, uploads "
                                  "solid and downloads dashed, as sampled on the shaper's own loop. A steep stretch "
                                  "is a transfer at the link's rate; a flat one is a client computing or waiting."))
    for r in runs[:MAX_RUN_FIGURES]:
        p = plots.plot_rounds(r.rounds, fig_dir / f"rounds-{_slug(r.path.name)}.png", f"Rounds: {r.label}")
        if p:
            out.append(Figure(f"Round by round: {r.label}", p,
                              "Each bar is one round's time on the network clock, communication (red) below compute "
                              "and framework (green); the line is the test accuracy after the round, when measured."))
    return out


def _within(summaries, tolerance: float) -> bool:
    """Every run moved the same bytes per client each way, up to ``tolerance`` (Flower's own requests vary)."""
    for key in ("mean_bytes_up_per_client", "mean_bytes_down_per_client"):
        values = [getattr(s, key) for s in summaries]
        if max(values) > (1 + tolerance) * min(values):
            return False
    return True


def _series(run: "ComparedRun"):
    from fedbw.shaper.series import SeriesReader

    path = run.path / SERIES_FILE
    if not path.exists():
        return None
    try:
        return SeriesReader(path).read()
    except (ValueError, TypeError, KeyError) as exc:
        run.notes.append(f"{path}: the link series is unreadable ({exc}); its figure is left out")
        return None


def _dominant(run: "ComparedRun") -> str:
    s = run.summary
    parts = {"communication": s.mean_comm_s, "compute": s.mean_compute_s, "Flower's own work": s.mean_framework_s}
    return max(parts, key=lambda k: parts[k])


def _accuracy_sentence(runs: Sequence["ComparedRun"], target: float | None) -> str:
    from fedbw.results.summary import time_to_accuracy

    if target is None:
        return ""
    reached = [(r.label, t) for r in runs if (t := time_to_accuracy(r.summary, target)) is not None]
    if not reached:
        return f"No run reached the {100 * target:g} % target (dashed line)."
    return f"Time to {100 * target:g} % (dashed line): " + _list([f"{_q(a)} {fmt_s(t)}" for a, t in reached]) + "."


def _bytes_sentence(runs: Sequence["ComparedRun"]) -> str:
    lo = min(runs, key=lambda r: r.summary.mean_bytes_up_per_client)
    hi = max(runs, key=lambda r: r.summary.mean_bytes_up_per_client)
    if lo is hi or lo.summary.mean_bytes_up_per_client == hi.summary.mean_bytes_up_per_client:
        return f"Upload per client and round: {fmt_bytes(hi.summary.mean_bytes_up_per_client)}."
    return (f"Upload per client and round: from {fmt_bytes(lo.summary.mean_bytes_up_per_client)} ({_q(lo.label)}) to "
            f"{fmt_bytes(hi.summary.mean_bytes_up_per_client)} ({_q(hi.label)}), "
            f"{hi.summary.mean_bytes_up_per_client / max(lo.summary.mean_bytes_up_per_client, 1):.2f}×.")


def _fabric_sentence(runs: Sequence["ComparedRun"]) -> str:
    best = [(r.label, f) for r in runs for f in r.fabrics if f.fl_round_over_allreduce]
    if not best:
        return ""
    label, f = max(best, key=lambda x: x[1].fl_round_over_allreduce or 0)
    return (f"The widest gap: one round of {_q(label)} lasts as long as {f.fl_round_over_allreduce:,.0f} "
            f"AllReduces on {f.fabric}.")


# --------------------------------------------------------------------------------------------- page

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 1000px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
.meta { color: #555; font-size: 0.9em; } .warn { background: #fff4d6; border-left: 4px solid #e0a800;
        padding: 0.5em 1em; margin: 1em 0; } ul.findings li { margin: 0.3em 0; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.5em 0; } th, td { padding: 0.25em 0.6em;
        border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
th { white-space: normal; min-width: 5em; max-width: 13em; vertical-align: bottom; }
th:first-child, td:first-child { text-align: left; } td.bound { color: #b00020; font-weight: bold; }
td.host { color: #a05a00; font-weight: bold; } .caption { color: #555; font-size: 0.85em; max-width: 60em; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #333; font-size: 0.95em; max-width: 60em; } .scroll { overflow-x: auto; }
details { margin: 0.6em 0; } code { background: #f4f4f4; padding: 0 0.2em; }
"""


def _page(runset: "RunSet", figures: list[Figure], target: float | None, title: str, command: str) -> str:
    from fedbw import __version__

    runs = runset.runs
    body = [f"<h1>{_e(title)}</h1>", f'<p class="meta">{_e(_subtitle(runset))}</p>']
    if runset.notes or any(r.notes for r in runs):
        notes = list(dict.fromkeys([*runset.notes, *(n for r in runs for n in r.notes)]))
        body.append('<div class="warn"><strong>Warnings</strong><ul>'
                    + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul></div>")
    body.append("<h2>In short</h2><ul class=\"findings\">" + "".join(f"<li>{_e(x)}</li>" for x in _findings(runs, target))
                + "</ul>")
    body.append("<h2>How to read this page</h2><p>A <em>round</em> is one exchange between the server and the "
                "sampled clients: download the model, train, upload the update. Times are on the <em>network "
                "clock</em>: the time the round would take on the links named in the config (estimate and "
                "simulate compute it from measured bytes; emulate measures it through shaped links). A round waits "
                "for its slowest client, so its parts are that client's. When communication is more than 30 % of "
                "the round, the round is <em>bandwidth-bound</em> (▲).</p>")
    body.append("<h2>Runs side by side</h2>" + _table(runs, target))
    body += [figure_html(f.title, f.path, f.caption) for f in figures]
    body.append("<h2>Every round</h2>" + "".join(_rounds_details(r) for r in runs))
    body.append("<h2>Where this came from</h2><ul>" + "".join(
        f"<li>{_e(r.label)}: <code>{_e(str(r.path))}</code> ({_e(r.summary.engine)})</li>" for r in runs) + "</ul>"
        f'<p class="meta">Written by fedbw {_e(__version__)} on {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}'
        f" with <code>{_e(command)}</code>. The PNGs are also in <code>{FIGURES_DIR}/</code> beside this page.</p>")
    return html_page(title, body)


def html_page(title: str, body: Sequence[str]) -> str:
    """A self-contained page (fedbw's CSS, every image inline) holding ``body``'s HTML parts in order."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def figure_html(title: str, path: Path, caption: str) -> str:
    """A figure with its PNG inline (the page stays one file)."""
    return (f"<figure><h2>{_e(title)}</h2><img alt=\"{_e(title)}\" src=\"{_data_uri(path)}\">"
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def table_html(head: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    """A scrollable table of plain text cells (escaped), with an optional caption below."""
    return ('<div class="scroll"><table><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
            + "</table></div>" + (f'<p class="caption">{_e(caption)}</p>' if caption else ""))


def _subtitle(runset: "RunSet") -> str:
    from fedbw.results.sweep_index import describe_value

    parts = []
    for path, index in runset.sweeps:
        grid = "; ".join(f"{a.key} over {', '.join(describe_value(v) for v in a.values)}" for a in index.grid)
        counts = ", ".join(f"{n} {k}" for k, n in index.counts().items())
        parts.append(f"sweep {path.name}: {grid} · engine {index.engine} · config {index.config} · points: {counts}")
    engines = sorted({r.summary.engine for r in runset.runs})
    parts.append(f"{len(runset.runs)} run(s) shown · engine {', '.join(engines)}")
    return " — ".join(parts)


def _findings(runs: Sequence["ComparedRun"], target: float | None) -> list[str]:
    from fedbw.results.summary import time_to_accuracy

    out = []
    slow = max(runs, key=lambda r: r.summary.mean_round_time_s)
    fast = min(runs, key=lambda r: r.summary.mean_round_time_s)

    def line(r: "ComparedRun") -> str:
        s = r.summary
        return (f"{fmt_s_interval(s.mean_round_time_s, s.mean_round_interval_s)} per round"
                f"{' (in brackets: its 10th–90th percentile)' if s.mean_round_interval_s else ''}, "
                f"{100 * s.mean_comm_fraction:.0f} % of it communication "
                f"({fmt_bytes(s.mean_bytes_up_per_client)} up per client)")

    if len(runs) == 1:
        out.append(f"{slow.label}: {line(slow)}; the largest part is {_dominant(slow)}.")
    else:
        out.append(f"Slowest: {slow.label}, {line(slow)}.")
        out.append(f"Fastest: {fast.label}, {line(fast)}"
                   + (f" — {slow.summary.mean_round_time_s / fast.summary.mean_round_time_s:.2f}× quicker than the "
                      f"slowest." if fast.summary.mean_round_time_s > 0 else "."))
    bound = [r.label for r in runs if r.summary.bandwidth_bound]
    out.append(f"Bandwidth-bound (communication above 30 % of the round): {_list(bound)}." if bound else
               f"No run is bandwidth-bound: {_dominant(slow)} takes the largest part of the slowest round.")
    acc = [r for r in runs if r.summary.final_accuracy is not None]
    if acc:
        best = max(acc, key=lambda r: r.summary.final_accuracy or 0)
        out.append(f"Best final accuracy: {best.label}, {100 * (best.summary.final_accuracy or 0):.1f} % after "
                   f"{best.summary.rounds} rounds.")
        if target is not None:
            reached = [(r, t) for r in acc if (t := time_to_accuracy(r.summary, target)) is not None]
            out.append(f"{100 * target:g} % accuracy reached first by {min(reached, key=lambda x: x[1])[0].label} "
                       f"after {fmt_s(min(t for _, t in reached))} on the network clock." if reached else
                       f"No run reached {100 * target:g} % accuracy.")
    else:
        out.append("No accuracy was measured (the estimate engine trains nothing).")
    eps = [r for r in runs if r.summary.final_epsilon is not None]
    if eps:
        out.append("Privacy spent (final ε): " + _list([f"{r.label} ε = {r.summary.final_epsilon:.3g}" for r in eps])
                   + ".")
    gap = _fabric_sentence(runs)
    if gap:
        out.append(gap)
    hosted = [r for r in runs if r.summary.mean_host_share is not None]
    if hosted:
        n = sum(len(r.summary.host_bound_rounds or []) for r in hosted)
        out.append(f"Emulation: {n} round(s) host-bound (the machine, not the links, held ≥ 5 % of the round)."
                   if n else "Emulation: no round was host-bound; the links, not this machine, set the times.")
    return out


def _table(runs: Sequence["ComparedRun"], target: float | None) -> str:
    head = "<tr><th></th>" + "".join(f"<th>{_e(r.label)}</th>" for r in runs) + "</tr>"
    rows = []
    for what, cells in comparison_rows(runs, target):
        tds = "".join(f"<td class=\"{'bound' if '▲' in c else 'host' if '◆' in c else ''}\">{_e(c)}</td>" for c in cells)
        rows.append(f"<tr><td>{_e(what)}</td>{tds}</tr>")
    return (f'<div class="scroll"><table>{head}{"".join(rows)}</table></div>'
            f'<p class="caption">{_e(COMPARISON_CAPTION)}.</p>')


def _rounds_details(r: "ComparedRun") -> str:
    host = any(x.host is not None for x in r.rounds)
    late = shows_used(r.rounds)
    cols = ["round", "used/sampled" if late else "clients",
            "round time [80 %]" if any(x.round_interval_s for x in r.rounds) else "round time",
            "comm", "compute", "framework", "up total", "down total", "accuracy", "ε"] + (["host"] if host else [])
    rows = []
    for x in r.rounds:
        cells = [str(x.round), used_cell(x, late), fmt_s_interval(x.round_time_s, x.round_interval_s),
                 f"{100 * x.comm_fraction:.0f} %" + (" ▲" if x.bandwidth_bound else ""), fmt_s(x.compute_time_s),
                 fmt_s(x.framework_time_s), fmt_bytes(x.bytes_up_total), fmt_bytes(x.bytes_down_total),
                 "-" if x.accuracy is None else f"{100 * x.accuracy:.1f} %",
                 "-" if x.epsilon is None else f"{x.epsilon:.3g}"]
        if host:
            cells.append("-" if x.host is None else f"{100 * x.host.share:.0f} %" + (" ◆" if x.host.bound else ""))
        rows.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    captions = [c for c in (late_caption(r.rounds) if late else None, availability_caption(r.rounds)) if c]
    caption = "".join(f'<p class="caption">{_e(c)}.</p>' for c in captions)
    return (f"<details><summary>{_e(r.label)}: {len(r.rounds)} rounds</summary><div class=\"scroll\"><table><tr>"
            + "".join(f"<th>{_e(c)}</th>" for c in cols) + "</tr>" + "".join(rows) + "</table></div>" + caption
            + "</details>")


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)


def _q(text: str) -> str:
    return f"“{text}”"


def _list(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "none"


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name)
