"""A study's outputs: study.json (everything), study.md (the table for docs), study.png (round time per
variant and profile, split into communication and compute), and the Rich table."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from fedbw.report import tables
from fedbw.report.format import fmt_bytes, fmt_s, fmt_s_interval
from fedbw.results.rundir import environment
from fedbw.results.study import StudyResult, StudyRow
from fedbw.report.study_figures import StudyView, has_accuracy_curve, plot_accuracy, plot_bars, plot_grid

COLUMNS = ("variant", "profile", "up/client", "down/client", "round 1", "round", "comm time", "framework", "comm", "ε",
           "ε terms", "clipped / wrapped", "accuracy", "up vs {baseline}", "round vs {baseline}")


def _eps(r: StudyRow) -> str:
    return "-" if r.epsilon is None else f"{r.epsilon:.3g}"


def _eps_terms(r: StudyRow) -> str:
    """What the ε means: sampling · adjacency · δ (an ε without them cannot be compared with another)."""
    if r.epsilon_delta is None:
        return "-"
    sampling = {"none": "local"}.get(r.epsilon_sampling or "", r.epsilon_sampling)  # local DP samples nothing
    return f"{sampling}, {r.epsilon_adjacency}, δ={r.epsilon_delta:g}"


def _secagg_counts(r: StudyRow) -> str:
    if r.secagg_clipped is None and r.secagg_wrapped is None:
        return "-"
    def show(v: int | None) -> str:
        return "?" if v is None else f"{v:,}"

    return f"{show(r.secagg_clipped)} / {show(r.secagg_wrapped)}"


def _acc(r: StudyRow) -> str:
    return "-" if r.accuracy is None else f"{100 * r.accuracy:.1f} %"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}×"


def _cells(r: StudyRow) -> list[str]:
    return [r.variant, r.profile, fmt_bytes(r.bytes_up_per_client), fmt_bytes(r.bytes_down_per_client),
            fmt_s(r.round1_time_s), fmt_s_interval(r.round_time_s, r.round_interval_s), fmt_s(r.comm_time_s), fmt_s(r.framework_time_s),
            f"{100 * r.comm_fraction:.0f} %", _eps(r), _eps_terms(r), _secagg_counts(r),
            _acc(r), _ratio(r.uplink_ratio), _ratio(r.round_ratio)]


def _steady_note(res: StudyResult) -> str:
    rounds = sorted({n for r in res.rows for n in r.steady_rounds})
    span = f"rounds {rounds[0]}–{rounds[-1]}" if len(rounds) > 1 else f"round {rounds[0]}" if rounds else "-"
    compute = ("measured on the machine that ran the study" if res.study.engine == "simulate"
               else "the device profile's estimate")
    return (f"bytes per client per round and \"round\" are means over {span} (steady state; stock SecAgg+ downloads "
            f"a float64 model from round 2 on; in brackets the round's 10th–90th percentile over Flower's unknown "
            f"poll phases and the calibration's intervals); every sampled client on the row's profile; ε and accuracy after the "
            f"last round; ε terms = the sampling it was accounted for (fixed-size, Poisson, or local: none), its "
            f"adjacency and δ (a fixed-sample replace-one ε, a Poisson add/remove ε and a local per-client ε are "
            f"different promises: docs/privacy.md); clipped / wrapped = SecAgg+ values clipped to the "
            f"quantization range (and weights clipped to max_weight) / values of the masked sum that wrapped, "
            f"summed over the rounds; comm time = communication on the round's "
            f"critical path (bytes and link only), framework = Flower's own time in the round (polls, a ClientApp "
            f"process per message, the server's work, SecAgg+'s crypto; 0 with framework = \"none\"), comm = "
            f"communication's share of the round (the rest is framework and client compute, {compute})")


#: The terminal table's key columns, never cut (the rest leave, least important first, where the terminal is
#: too narrow: STUDY_DROP).
STUDY_KEY = ("variant", "profile", "up/client", "round", "comm")
#: The order the other columns leave a narrow terminal's table in: SecAgg+'s clip counts, the first round,
#: bytes down, framework, comm time, the uplink ratio, accuracy, then ε with its terms (never one without
#: the other: an ε without its sampling, adjacency and δ promises nothing).
STUDY_DROP = ("clipped / wrapped", "round 1", "down/client", "framework", "comm time", "up vs {baseline}",
              "round vs {baseline}", "accuracy", ("ε", "ε terms"))


def rich_table(res: StudyResult) -> tables.FitTable:
    """The study in the terminal: every column of study.md where the terminal is wide enough; where it is not
    (privacy-overhead's table is about 200 columns wide), the key columns — variant, profile, up/client, round
    (with its interval), comm — stay whole and the others leave in STUDY_DROP's order (privacy-overhead at 160
    columns: clipped / wrapped, round 1, down/client; at 80: all of them); the caption names them. study.md
    always has every column."""
    s = res.study
    head = [c.format(baseline=s.baseline) for c in COLUMNS]
    cols = [tables.Col(h, key=c in STUDY_KEY, left=c == "profile") for c, h in zip(COLUMNS, head)]
    named = {c: c.format(baseline=s.baseline) for c in COLUMNS}
    drop = [tuple(named[c] for c in u) if isinstance(u, tuple) else named[u] for u in STUDY_DROP]
    t = tables.FitTable(f"Study {s.name} ({s.engine}, network clock)", cols, drop=drop, caption=_steady_note(res),
                        left_out="the study's study.md has every column")
    for r in res.rows:
        cells = _cells(r)
        cells[COLUMNS.index("comm")] = tables.fmt_frac(r.comm_fraction, r.bandwidth_bound)
        t.add_row(*cells)
    return t


def markdown(res: StudyResult) -> str:
    s = res.study
    env = environment()
    head = [c.format(baseline=s.baseline) for c in COLUMNS]
    lines = [f"# Study {s.name}", "",
             f"- command: `{res.command or f'fedbw study {s.source}'}`",
             f"- engine: {s.engine}; started {res.started_utc}; machine: {env['platform']}, {env['cpu_count']} CPU(s), "
             f"Python {env['python']}, flwr {env['packages'].get('flwr')}, torch {env['packages'].get('torch')}",
             f"- runs: {', '.join(f'{k} → `{Path(v).name}`' for k, v in res.run_dirs.items())}", "",
             "| " + " | ".join(head) + " |",
             "|" + "|".join("---" if i < 2 else "---:" for i in range(len(head))) + "|"]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in res.rows]
    lines += ["", _steady_note(res) + "."]
    for name, why in res.stopped_early.items():
        lines.append(f"\n{name}: {why}.")
    return "\n".join(lines) + "\n"


def plot(res: StudyResult, path: Path) -> Path:
    """A study with a grid: the overhead figure (:func:`plot_grid`); else grouped bars (:func:`plot_bars`)."""
    view = StudyView.of(res)
    return plot_grid(view, path) if view.grid else plot_bars(view, path)


def write_outputs(res: StudyResult) -> list[Path]:
    d = res.study_dir
    s = res.study
    data = {"study": s.name, "source": s.source, "engine": s.engine, "command": res.command,
            "started_utc": res.started_utc, "made_by": res.made_by, "profiles": s.profiles, "baseline": s.baseline,
            "grid": s.grid,
            "variants": [{"name": v.name, "kind": v.kind or v.name, "cell": dict(v.cell), "set": list(v.overrides),
                          "run_dir": str(res.run_dirs.get(v.name)), "stopped_early": res.stopped_early.get(v.name)}
                         for v in s.variants],
            "environment": environment(), "rows": [asdict(r) for r in res.rows]}
    (d / "study.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (d / "study.md").write_text(markdown(res), encoding="utf-8")
    png = plot(res, d / "study.png")
    view = StudyView.of(res)
    accuracy = plot_accuracy(view, d / "study-accuracy.png") if has_accuracy_curve(view) else None
    (d / "study.html").write_text(html_report(res, png, accuracy), encoding="utf-8")
    return [d / "study.json", d / "study.md", png, *([accuracy] if accuracy else []), d / "study.html"]


def html_report(res: StudyResult, png: Path, accuracy_png: Path | None = None) -> str:
    """study.html: the figure a person reads first, then every column of the table, on one page."""
    from html import escape

    from fedbw.report.html import figure_html, html_page, table_html

    s = res.study
    head = [c.format(baseline=s.baseline) for c in COLUMNS]
    what = ("each variant's round time (solid) and uplink bytes (dashed) against the baseline of its own cell"
            if s.grid else "each variant's steady round per profile: communication solid, the rest hatched")
    made = ", ".join(f"{k} {v}" for k, v in res.made_by.items() if v)
    meta = (f"engine {s.engine} · started {res.started_utc} · {len(s.variants)} runs × {len(s.profiles)} profiles"
            + (f" · {made}" if made else ""))
    body = [f"<h1>Study {escape(s.name)}</h1>",
            f'<p class="meta">{escape(meta)} · <code>{escape(res.command or f"fedbw study {s.source}")}</code></p>',
            *([figure_html("Accuracy and ε", accuracy_png, "accuracy after the last round against the grid's "
                                                             "numeric setting, each point labelled with its ε")]
              if accuracy_png else []),
            figure_html("Overhead" if s.grid else "Round time", png, what),
            "<h2>Every row</h2>" + table_html(head, [_cells(r) for r in res.rows], _steady_note(res) + ".")]
    return html_page(f"Study {s.name}", body)
