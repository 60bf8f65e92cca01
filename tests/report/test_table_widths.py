"""Tables never cut a key column (issue 33.8): the run's rounds and per-profile tables, the study table and
`fedbw compare`'s tables keep every key header and cell whole at 80 and at 160 columns; the less important
columns leave (and the caption says which), the runs of a comparison come in groups."""

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
    text = _render(260, rich_table(_study(tmp_path)))
    _no_cut(text)
    assert _heads(_line(text, "variant", "profile")) == {
        "variant", "profile", "up/client", "down/client", "round 1", "round", "comm time", "framework", "comm", "ε",
        "ε terms", "clipped / wrapped", "accuracy", "up vs plain"}
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
