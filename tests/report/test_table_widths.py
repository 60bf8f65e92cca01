"""Tables never cut a key column (issue 33.8): the run's rounds and per-profile tables, the study table,
`fedbw compare`'s tables, `fedbw estimate`'s per-profile and fabric tables, both sweeps' tables, `fedbw
emulate --app`'s per-client and per-round tables, the `fedbw profiles` and `fedbw models` listings and the
data-center tables (`fedbw allreduce`, model and measured; `fedbw step`, measured and modelled) keep every
key header and cell whole at 80 and at 160 columns; the less important columns leave (and the caption says
which), prose wraps at its words, the runs of a comparison come in groups."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from fedbw.config.study import Study
from fedbw.privacy.record import PrivacyRound
from fedbw.report import tables
from fedbw.report.format import fmt_bytes, fmt_s, fmt_s_interval
from fedbw.report.study import rich_table
from fedbw.report.terminal import render_comparison, render_records
from fedbw.results.compared import ComparedRun, FabricRatio
from fedbw.results.host_record import HostRound
from fedbw.results.records import ClientRoundRecord, RoundRecord, StageRecord
from fedbw.results.study import StudyResult, StudyRow
from fedbw.results.summary import summarize

WIDTHS = [80, 160]
PROFILES = ("home-30", "home-50", "home-80")
ROOT = Path(__file__).resolve().parents[2]


def _render(width: int, *renderables) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    for r in renderables:
        console.print(r)
    return console.export_text()


def _line(text: str, *starts: str) -> str:
    """The first line that begins (after its indent) with every one of ``starts``, in order, word by word."""
    for ln in text.splitlines():
        rest = ln.strip()
        if all(w in rest for w in starts) and rest.startswith(starts[0]):
            return ln
    raise AssertionError(f"no line starting with {starts!r} in:\n{text}")


def _heads(line: str) -> set[str]:
    """A header line's column names (columns lie at least two spaces apart)."""
    return set(re.split(r"\s{2,}", line.strip()))


def _no_cut(text: str) -> None:
    assert "…" not in text, f"a cell cut to an ellipsis:\n{text}"


# ------------------------------------------------------------------------------------------------- data


def _rounds(run: str = "r", engine: str = "simulate", scale: float = 1.0, host: bool = True,
            dp: bool = True) -> list[RoundRecord]:
    """Three rounds with everything a round can carry: an interval, ε with its terms, host shares."""
    out = []
    for i in range(1, 4):
        t = 24.2 * scale + i
        out.append(RoundRecord(
            run, engine, i, 5, t, 0.4 * t, 1.5, t - 0.4 * t - 1.5, {"fit": t}, 2.75e6 * scale, 2.75e6 * scale,
            loss=0.5 / i, accuracy=0.5 + 0.1 * i, epsilon=10.110 * i if dp else None,
            privacy=PrivacyRound(delta=1e-5, sampling="fixed", adjacency="replace-one") if dp else None,
            host=HostRound(lost_s=0.08 * t, share=0.08 if i == 2 else 0.01) if host else None,
            round_interval_s=(t - 2.3, t + 2.9)))
    return out


def _clients(run: str = "r", engine: str = "simulate", profiles=PROFILES) -> list[ClientRoundRecord]:
    return [ClientRoundRecord(run, engine, i, c, profiles[c % len(profiles)],
                              [StageRecord("fit", 550_680.0, 550_680.0, 0.509, 0.011, 0.438, 7.33)])
            for i in range(1, 4) for c in range(5)]


def _study(tmp_path: Path) -> StudyResult:
    rows = []
    for v in ("plain", "dp-poisson", "secagg-packed+dp"):
        dp = "dp" in v
        for k, p in enumerate(PROFILES):
            t = 27.47 - k if "secagg" in v else 9.42 - k
            rows.append(StudyRow(
                v, p, 3, [2, 3], 552_740.0, 554_420.0, 30.1, t, 1.84, 0.05, 0.07, False,
                epsilon=8.32 if dp else None, accuracy=0.856, loss=0.44, uplink_ratio=1.003, framework_time_s=25.6,
                epsilon_delta=1e-5 if dp else None, epsilon_sampling="poisson" if dp else None,
                epsilon_adjacency="add/remove" if dp else None, secagg_clipped=0 if "secagg" in v else None,
                secagg_wrapped=0 if "secagg" in v else None, round_interval_s=(t - 2.74, t + 2.75)))
    study = Study("privacy-overhead", "study.toml", list(PROFILES), [], "plain", "simulate", "runs")
    return StudyResult(study, tmp_path, rows)


def _compared(n: int) -> list[ComparedRun]:
    runs = []
    for j in range(n):
        rounds = _rounds(f"run{j}", scale=1 + j, host=j == 0, dp=j % 2 == 1)
        clients = _clients(f"run{j}")
        runs.append(ComparedRun(
            label=f"profile=home-{30 + 10 * j} · secagg.enabled={'true' if j % 2 else 'false'} · "
                  f"dp.enabled={'true' if j % 2 else 'false'}",
            path=Path(f"/runs/run{j}"), summary=summarize(f"run{j}", clients, rounds), config=None,
            privacy="DP central-client-fixed σ=1.0" if j % 2 else "none",
            fabrics=[FabricRatio("nvlink4", 8, 1e-5, 2.42e6 * (1 + j))], notes=[], overrides={},
            clients=clients, rounds=rounds))
    return runs


# ------------------------------------------------------------------------------------------ run's tables


@pytest.mark.parametrize("width", WIDTHS)
def test_the_rounds_table_keeps_round_round_time_comm_and_bytes_up_whole(width: int) -> None:
    rounds = _rounds()
    text = _render(width, tables.rounds_table(rounds, "Rounds (network clock)"))
    _no_cut(text)
    header = _heads(_line(text, "round", "round time [80 %]"))
    assert {"round", "round time [80 %]", "comm", "up total"} <= header, header
    for r in rounds:
        line = _line(text, str(r.round), fmt_s_interval(r.round_time_s, r.round_interval_s))
        for cell in (fmt_s_interval(r.round_time_s, r.round_interval_s),
                     f"{100 * r.comm_fraction:.0f} %", fmt_bytes(r.bytes_up_total)):
            assert cell in line, (cell, text)
    assert ("not shown at" in text) == (width < 150)  # every column at 160; at 80 the caption says what left
    if width >= 150:
        assert {"clients", "loss", "accuracy", "ε", "host", "down total", "framework"} <= header, header


@pytest.mark.parametrize("width", WIDTHS)
def test_the_per_profile_table_keeps_profile_bytes_up_and_times_whole(width: int) -> None:
    clients = _clients()
    text = _render(width, tables.by_profile_table(clients, "Per client and round, by link profile (means)"))
    _no_cut(text)
    assert {"profile", "up/client", "t_up", "client time"} <= _heads(_line(text, "profile"))
    for p in PROFILES:
        line = _line(text, p)
        for cell in ("550.68 kB", "438.00 ms", "8.29 s"):
            assert cell in line, (cell, text)


@pytest.mark.parametrize("width", WIDTHS)
def test_render_records_prints_both_run_tables_whole(width: int) -> None:
    run = _compared(1)[0]
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    render_records(console, run)
    text = console.export_text()
    _no_cut(text)
    assert "round time [80 %]" in text and "client time" in text
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= width


# ---------------------------------------------------------------------------------------------- study


@pytest.mark.parametrize("width", WIDTHS)
def test_the_study_table_keeps_variant_profile_bytes_round_and_comm_whole(width: int, tmp_path) -> None:
    res = _study(tmp_path)
    text = _render(width, rich_table(res))
    _no_cut(text)
    header = _heads(_line(text, "variant", "profile"))
    assert {"variant", "profile", "up/client", "round", "comm"} <= header, header
    for r in res.rows:
        line = _line(text, r.variant, r.profile)
        for cell in (r.profile, "552.74 kB", fmt_s_interval(r.round_time_s, r.round_interval_s),
                     f"{100 * r.comm_fraction:.0f} %"):
            assert cell in line, (cell, line)
    # ε never without its terms: both shown or both left out
    assert ("ε" in header) == ("ε terms" in header)
    if "ε terms" in header:
        assert "poisson, add/remove, δ=1e-05" in text
    assert "not shown at" in text and "study.md has every column" in " ".join(text.split())


def test_a_wide_terminal_shows_every_study_column(tmp_path) -> None:
    text = _render(280, rich_table(_study(tmp_path)))
    _no_cut(text)
    assert _heads(_line(text, "variant", "profile")) == {
        "variant", "profile", "up/client", "down/client", "round 1", "round", "comm time", "framework", "comm", "ε",
        "ε terms", "clipped / wrapped", "accuracy", "up vs plain", "round vs plain"}
    assert "not shown at" not in text


# --------------------------------------------------------------------------------------------- compare


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("n", [2, 5])
def test_compare_keeps_every_figure_whole_and_groups_runs_that_do_not_fit(width: int, n: int) -> None:
    runs = _compared(n)
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    render_comparison(console, runs, target=0.7)
    text = console.export_text()
    _no_cut(text)
    lines = text.splitlines()
    assert max(len(ln.rstrip()) for ln in lines) <= width
    for what, cells in (("round time (mean) [80 %]", [fmt_s_interval(r.summary.mean_round_time_s,
                                                                             r.summary.mean_round_interval_s)
                                                       for r in runs]),
                        ("comm share (▲ > 30 %)", [f"{100 * r.summary.mean_comm_fraction:.0f} %" for r in runs]),
                        ("bytes up / client", [fmt_bytes(r.summary.mean_bytes_up_per_client) for r in runs])):
        rows = [ln for ln in lines if ln.strip().startswith(what)]
        assert rows, (what, text)
        for cell in cells:
            assert any(cell in ln for ln in rows), (what, cell, text)
    # every run's per-profile client time whole too
    for r in runs:
        for p, t in r.summary.per_profile_client_time_s.items():
            cell = f"{fmt_s(t)} ({fmt_s(r.summary.per_profile_up_s[p])})"
            assert any(ln.strip().startswith(p) and cell in ln for ln in lines), (cell, text)
    # every word of every label whole (labels wrap at their words)
    for r in runs:
        for word in r.label.split():
            assert word in text
    if n == 5 and width == 80:
        assert "Runs side by side (runs 1–2 of 5)" in text  # grouped, never dropped


# ------------------------------------------------------------------------------------ the CLI, end to end


def test_fedbw_run_prints_whole_tables_at_80_columns(tmp_path, monkeypatch) -> None:
    from fedbw.cli import app

    buf = io.StringIO()
    monkeypatch.setattr("fedbw.cli.experiments.out", Console(width=80, file=buf, color_system=None))
    res = CliRunner().invoke(app, ["run", "--engine", "estimate", str(ROOT / "experiments" / "quickstart.toml"),
                                   "--set", f'output_dir="{tmp_path}"', "--set", "privacy.dp.enabled=true"])
    assert res.exit_code == 0, res.output
    text = buf.getvalue()
    _no_cut(text)
    assert "round time [80 %]" in text and "up total" in text
    for p in PROFILES:
        assert _line(text, p)


def test_fedbw_study_prints_whole_tables_at_80_columns(tmp_path, monkeypatch) -> None:
    from fedbw.cli import app

    study = tmp_path / "s.toml"
    study.write_text(f'[base]\nengine = "estimate"\noutput_dir = "{tmp_path / "runs"}"\n[base.clients]\ntotal = 5\n'
                     'per_round = 3\n[base.training]\nrounds = 2\n[study]\nname = "t"\n'
                     'profiles = ["home-30", "home-80"]\n[[study.variants]]\nname = "plain"\n'
                     '[[study.variants]]\nname = "secagg-packed+dp"\nset = ["privacy.secagg.enabled=true", '
                     '"privacy.secagg.mode=\\"packed\\"", "privacy.dp.enabled=true", '
                     '"privacy.dp.mode=\\"central-client-fixed\\""]\n')
    buf = io.StringIO()
    monkeypatch.setattr("fedbw.cli.experiments.out", Console(width=80, file=buf, color_system=None))
    res = CliRunner().invoke(app, ["study", str(study)])
    assert res.exit_code == 0, res.output
    text = buf.getvalue()
    _no_cut(text)
    for v in ("plain", "secagg-packed+dp"):
        for p in ("home-30", "home-80"):
            assert _line(text, v, p)


# ---------------------------------------------------------------------------------- estimate and sweep


def _rows_whole(text: str, rows: list[list[str]]) -> None:
    """Each row's first cell begins a line that holds every other key cell of the row whole."""
    for cells in rows:
        line = _line(text, cells[0])
        for cell in cells:
            assert cell in line, (cell, line, text)


def _fits(text: str, width: int) -> None:
    _no_cut(text)
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= width, text


def _printed(width: int, render, *args) -> str:
    """What ``render(console, *args)`` prints on a terminal ``width`` columns wide."""
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    render(console, *args)
    return console.export_text()


@pytest.mark.parametrize("width", WIDTHS)
def test_estimate_keeps_profile_bytes_up_round_comm_and_fabric_time_busbw_ratio_whole(width: int) -> None:
    from fedbw.compare import estimate_report
    from fedbw.report.terminal import render_estimate

    rep = estimate_report(None, model="resnet50", profiles=["home-30", "mobile-4g", "cross-silo-1g"])
    text = _printed(width, render_estimate, rep)
    _fits(text, width)
    assert {"profile", "up/client", "round", "comm"} <= _heads(_line(text, "profile"))
    assert {"fabric", "time", "busbw GB/s", "FL round/this"} <= _heads(_line(text, "fabric"))
    _rows_whole(text, [[p.profile, fmt_bytes(p.bytes_up_per_client), fmt_s(p.round_time_s),
                        f"{100 * p.comm_fraction:.0f} %"] for p in rep.profiles])
    slowest = max(p.round_time_s for p in rep.profiles)
    _rows_whole(text, [[f.fabric, fmt_s(f.time_s), f"{f.busbw_gbps:.2f}", f"{slowest / f.time_s:,.0f}×"]
                       for f in rep.fabrics])
    if width >= 150:
        assert "not shown at" not in text


@pytest.mark.parametrize("width", WIDTHS)
def test_the_analytic_sweep_keeps_value_round_comm_and_bytes_up_whole(width: int) -> None:
    from fedbw.report.terminal import render_sweep
    from fedbw.results.estimates import SweepPoint

    points = [SweepPoint(v, 8.8 + v / 100, 0.9 + v / 100, 0.45 - v / 1000, v < 50, 110_340_128.0, 110_340_128.0)
              for v in (10.0, 27.5, 45.0, 62.5, 80.0)]
    text = _printed(width, render_sweep, "network.uplink_mbps", points)
    _fits(text, width)
    assert {"network.uplink_mbps", "round", "comm", "up/client"} <= _heads(_line(text, "network.uplink_mbps"))
    _rows_whole(text, [[f"{p.value:.4g}", fmt_s(p.round_time_s), f"{100 * p.comm_fraction:.0f} %",
                        fmt_bytes(p.bytes_up_per_client)] for p in points])


@pytest.mark.parametrize("width", WIDTHS)
def test_the_grid_sweep_keeps_point_values_status_round_and_comm_whole(width: int, tmp_path) -> None:
    from fedbw.report.terminal import render_grid_sweep
    from fedbw.results.sweep_index import GridAxis, GridPoint, SweepIndex

    axes = [GridAxis("network.profile", ("home-30", "mobile-4g")),
            GridAxis("privacy.secagg.mode", ("stock", "packed"))]
    points = [GridPoint(i + 1, {"network.profile": p, "privacy.secagg.mode": m}, "done" if i < 3 else "failed",
                        f"quickstart-{p}-secagg-{m}-20250301T120102-3f9a{i}")
              for i, (p, m) in enumerate((p, m) for p in axes[0].values for m in axes[1].values)]
    index = SweepIndex("grid", "quickstart.toml", "0" * 64, "simulate", [], axes, points, "2025-03-01T12:00:00Z")
    summaries = {p.index: summarize(f"r{p.index}", _clients(), _rounds(scale=p.index)) if p.status == "done"
                 else None for p in points}
    text = _printed(width, render_grid_sweep, tmp_path, index, summaries)
    _fits(text.split("sweep index:")[0], width)  # the paths after the table are the machine's, not cut
    assert {"#", "network.profile", "privacy.secagg.mode", "status", "mean round", "comm"} <= _heads(
        _line(text, "#", "network.profile"))
    for p in points:
        s = summaries[p.index]
        cells = [str(p.index), p.overrides["network.profile"], p.overrides["privacy.secagg.mode"], p.status]
        if s is not None:
            cells += [fmt_s(s.mean_round_time_s), f"{100 * s.mean_comm_fraction:.0f} %"]
        line = _line(text, *cells[:2])
        for cell in cells:
            assert cell in line, (cell, line, text)
    if width >= 150:
        assert all(p.run_dir in text for p in points)
    else:
        assert "not shown at" in text


# ------------------------------------------------------------------------------------ emulate --app


def _app_run():
    from fedbw.engines.emulate.federation import EmulatedClient, EmulationResult, MessageMeasure
    from fedbw.engines.emulate.foreign import AppRun
    from fedbw.engines.emulate.supernode_log import MessageSpan
    from fedbw.shaper.series import Transfer

    clients = [EmulatedClient(c, PROFILES[c % 3], None) for c in range(5)]
    messages = [MessageMeasure(c, MessageSpan(i, "train", str(i + 1), 10.0 * i, 10.0 * i + 0.5, 10.0 * i + 1.2,
                                              10.0 * i + 4.7, 10.0 * i + 6.1),
                               Transfer(550_680, 10.0 * i, 10.0 * i + 0.5), Transfer(550_680, 10.0 * i + 4.7,
                                                                                      10.0 * i + 6.1))
                for c in range(5) for i in range(3)]
    res = EmulationResult(1, None, clients, messages, {c: 1_652_040 + 1000 * c for c in range(5)},
                          {c: 1_660_120 for c in range(5)}, 12.3, 31.9, [], dilation=2.0)
    return AppRun(res, [], _rounds(engine="emulate", dp=False), None)


@pytest.mark.parametrize("width", WIDTHS)
def test_emulate_app_keeps_client_profile_bytes_up_and_round_times_whole(width: int) -> None:
    from fedbw.report.app_run import render_app_run

    run = _app_run()
    text = _printed(width, render_app_run, run)
    _fits(text, width)
    res = run.result
    assert {"client", "profile", "up", "t_up"} <= _heads(_line(text, "client", "profile"))
    for c in res.clients:
        line = _line(text, str(c.client_id), c.profile)
        for cell in (c.profile, fmt_bytes(res.bytes_up[c.client_id]), "4.20 s"):
            assert cell in line, (cell, line, text)
    assert {"round", "round time", "network (critical path)", "up total"} <= _heads(_line(text, "round", "round time"))
    for r in run.rounds:
        line = _line(text, str(r.round), f"{r.round_time_s:.2f} s")
        for cell in (f"{r.comm_time_s:.2f} s", fmt_bytes(r.bytes_up_total)):
            assert cell in line, (cell, line, text)


# ---------------------------------------------------------------------------------------- catalogs


def _words_whole(text: str, prose: str) -> None:
    """Every word of a wrapped prose cell is in ``text`` whole (prose wraps at its words, never cut)."""
    for word in prose.split():
        assert word in text, (word, text)


@pytest.mark.parametrize("width", WIDTHS)
def test_fedbw_profiles_keeps_names_and_rates_whole_and_wraps_descriptions(width: int) -> None:
    from fedbw.catalog import DEVICE_PROFILES, FABRICS, LINK_PROFILES, SERVER_LINKS
    from fedbw.report.terminal import render_catalogs

    text = _printed(width, render_catalogs)
    _fits(text, width)
    _rows_whole(text, [[p.name, f"{p.up_mbps:g}", f"{p.down_mbps:g}"] for p in LINK_PROFILES.values()])
    _rows_whole(text, [[s.name, f"{s.up_mbps:g}", f"{s.down_mbps:g}"] for s in SERVER_LINKS.values()])
    _rows_whole(text, [[f.name, f"{f.busbw_gbps:g}", f"{f.alpha_us:g}"] for f in FABRICS.values()])
    _rows_whole(text, [[d.name, f"{d.effective_tflops:g}"] for d in DEVICE_PROFILES.values()])
    for d in [*LINK_PROFILES.values(), *SERVER_LINKS.values(), *FABRICS.values(), *DEVICE_PROFILES.values()]:
        _words_whole(text, d.description)
    for line in (_line(text, "name", "up Mbps", "down Mbps"), _line(text, "name", "busbw GB/s")):
        assert "description" in line


@pytest.mark.parametrize("width", WIDTHS)
def test_fedbw_models_keeps_name_params_and_size_whole_and_wraps_descriptions(width: int) -> None:
    from fedbw.catalog import MODELS
    from fedbw.report.terminal import render_models

    text = _printed(width, render_models)
    _fits(text, width)
    assert {"name", "params", "float32", "description"} <= _heads(_line(text, "name", "params"))
    _rows_whole(text, [[m.name, f"{m.params:,}", fmt_bytes(m.float32_bytes)] for m in MODELS.values()])
    for m in MODELS.values():
        _words_whole(text, m.description)
    if width >= 150:
        assert "not shown at" not in text


# ------------------------------------------------------------------------------------- data center


@pytest.mark.parametrize("width", WIDTHS)
def test_the_allreduce_model_keeps_size_ranks_fabric_time_and_busbw_whole(width: int) -> None:
    from fedbw.collectives import allreduce_rows
    from fedbw.report.datacenter import render_allreduce

    rows = allreduce_rows([8, 65_536, 134_217_728, 4_294_967_296], [8, 1024], "ib-ndr400", node_fabric="nvlink4")
    text = _printed(width, render_allreduce, rows)
    _fits(text, width)
    assert {"size (B)", "ranks", "fabric", "time (us)", "busbw (GB/s)"} <= _heads(_line(text, "size (B)"))
    lines = text.splitlines()
    for r in rows:
        cells = [f"{r.size_bytes:,.0f}", str(r.ranks), r.fabric, f"{r.time_s * 1e6:,.1f}", f"{r.busbw_gbps:.2f}"]
        assert any(ln.strip().startswith(cells[0] + " ") and all(c in ln for c in cells) for ln in lines), (cells, text)


def _measured():
    from fedbw.collectives.fit import AlphaBetaFit
    from fedbw.collectives.rows import AllReduceMeasurement, AllReduceTable, MeasuredRow, Verdict

    rows = [MeasuredRow(s, s // 4, "float", 8, 2e-5 + s * 3.1e-10, 1.9e-5 + s * 3e-10, 0, 0, 7.9, 0.99,
                        1.8e-5 + s * 2.2e-10, 1.9e-5 + s * 3e-10 * 1.01)
               for s in (1024, 1_048_576, 134_217_728, 1_073_741_824)]
    fit = AlphaBetaFit(2.6e-6, 3e-10, 4, (0.01, -0.02, 0.0, 0.01))
    table = AllReduceTable(8, rows, fit, Verdict("cpu", "CPU-bound: the ranks kept 7.9 of 8 cores busy"))
    return AllReduceMeasurement("gloo", "float32", "one host", "ib-ndr400", "ring", 20, 5, [table], None)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_measured_allreduce_keeps_size_in_place_time_busbw_and_model_whole(width: int) -> None:
    from fedbw.report.datacenter import _bw, _us, render_allreduce_measured

    m = _measured()
    text = _printed(width, render_allreduce_measured, m)
    _fits(text, width)
    for r in m.tables[0].rows:
        line = _line(text, f"{r.size_bytes:,}")
        for cell in (f"{r.size_bytes:,}", _us(r.ip_time_s), _bw(r.ip_busbw_gbps), _us(r.model_time_s)):
            assert cell in line, (cell, line, text)
    for head in ("in-place", "time (us)", "busbw", "model"):
        assert head in text
    if width >= 150:  # every nccl-tests column but redop ("sum", always), out-of-place and in-place
        assert "not shown at 160 columns: redop (" in text and text.count("#wrong") == 2 and "out-of-place" in text
        assert "cores" in text and "resid" in text
    else:  # the out-of-place block leaves whole: no column left under another's label
        header = text.split("──")[0].split("GB/s = 10^9 B/s")[1]
        assert "in-place" in header and "out-of-place" not in header and "algbw" not in header, header


def _step():
    from fedbw.collectives.step import StepMeasurement, VariantResult
    from fedbw.collectives.step_model import ModelledStep

    names = ("no-comm", "overlap", "no-overlap", "accumulate", "fp16", "powersgd")
    variants = [VariantResult(v, 4 if v == "accumulate" else 1, 0.412 + 0.03 * i, 0.301, 0.02 * i + 0.05,
                              0.01 * i, 46_758_920.0 / (2 if v == "fp16" else 1), 81_828_110.0, 8, 2.0)
                for i, v in enumerate(names)]
    modelled = [ModelledStep(n, k, 8, 0.118, 0.0042 * (i + 1) ** 3, 0.1 * i, 0.05 * i,
                             0.03 * i if i else None, 0.01 * i if i else None, 0.02 * i, 4)
                for i, (n, k) in enumerate((("nvlink4", "fabric"), ("ib-ndr400", "fabric"), ("eth-10g", "fabric"),
                                            ("cross-silo-1g", "uplink"), ("home-30", "uplink")))]
    return StepMeasurement("resnet18", 11_689_512, "gloo", 2, 4, 3, 2, 4, 2, variants, modelled, 8, 32, "dc-gpu")


@pytest.mark.parametrize("width", WIDTHS)
def test_fedbw_step_keeps_variant_step_share_and_speedup_whole(width: int) -> None:
    from fedbw.report.datacenter import render_step, variant_label

    m = _step()
    text = _printed(width, render_step, m, 0.3)
    _fits(text, width)
    assert {"variant", "step", "share", "vs DDP"} <= _heads(_line(text, "variant", "step"))
    for v in m.variants:
        speed = m.speedup(v)
        cells = [variant_label(v.variant, m.accumulate, m.powersgd_rank), fmt_s(v.step_s),
                 f"{100 * v.exposed_share:.0f} %", "-" if speed is None else f"{speed:.2f}×"]
        _rows_whole(text, [cells])
    assert {"network", "no overlap", "overlap"} <= _heads(_line(text, "network", "overlap"))
    for r in m.modelled:
        _rows_whole(text, [[r.network, f"{100 * r.share_no_overlap:.0f} %", f"{100 * r.share_overlap:.0f} %"]])


# ------------------------------------------------------------------------------- the CLI, at 80 columns


@pytest.mark.parametrize("args, module, needles", [
    (["estimate", "--model", "resnet50"], "analytic", ["home-30", "home-80", "nvlink4", "FL round/this"]),
    (["profiles"], "analytic", ["cross-silo-1g", "server-10g", "ib-ndr400", "laptop-cpu"]),
    (["models"], "analytic", ["gpt3-175b", "175,000,000,000", "small-cnn", "136,586"]),
    (["allreduce", "--ranks", "8,1024", "--sizes", "8:4G:64", "--node-fabric", "nvlink4"], "datacenter",
     ["134,217,728", "nvlink4+ib-ndr400", "busbw (GB/s)"]),
])
def test_instant_commands_print_whole_tables_at_80_columns(args, module, needles, monkeypatch) -> None:
    from fedbw.cli import app

    buf = io.StringIO()
    monkeypatch.setattr(f"fedbw.cli.{module}.out", Console(width=80, file=buf, color_system=None))
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    text = buf.getvalue()
    _fits(text, 80)
    for needle in needles:
        assert needle in text, (needle, text)
