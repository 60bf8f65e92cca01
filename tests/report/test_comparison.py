"""`fedbw compare` in the terminal: one column per run, one row per figure, marks where a run is bound."""

from pathlib import Path

from typer.testing import CliRunner

from fedbw.cli import app
from fedbw.compare import load_runs
from fedbw.report.terminal import comparison_rows

runner = CliRunner()


def _rows(paths, target=0.8):
    return dict(comparison_rows(load_runs(paths).runs, target))


def test_every_row_of_the_issue_is_there_with_one_cell_per_run(tmp_path, make_run):
    a = make_run(tmp_path / "a", engine="emulate", up_s=2.0, host_shares=(0.01, 0.08, 0.02))
    b = make_run(tmp_path / "b", engine="emulate", profile="home-80", up_s=0.1, compute_s=3.0,
                 host_shares=(0.0, 0.0, 0.0), sets=("privacy.secagg.enabled=true",))
    rows = _rows([a, b])
    assert rows["round time (mean)"] == ["2.70 s", "3.30 s"]
    assert rows["  download"] == ["200.00 ms", "200.00 ms"] and rows["  upload"] == ["2.00 s", "100.00 ms"]
    assert rows["  compute"] == ["500.00 ms", "3.00 s"]
    assert rows["comm share (▲ > 30 %)"] == ["81 % ▲", "9 %"]  # the 30 % mark: a is bandwidth-bound, b is not
    assert rows["bytes up / client"] == ["2.00 MB", "2.00 MB"] and rows["bytes down / client"] == ["1.00 MB"] * 2
    assert rows["privacy"] == ["none", "SecAgg+ stock"]
    assert rows["time to 80 % accuracy"] == ["8.10 s", "9.90 s"]  # round 3 of each
    assert rows["final accuracy"] == ["90.0 %", "90.0 %"]
    assert rows["host share (emulate)"][0] == "4 % ◆ 1/3 rounds host-bound"
    assert {k for k in rows if k.startswith("÷ AllReduce")} == {
        f"÷ AllReduce {f} ×8" for f in ("nvlink4", "ib-ndr400", "roce-100g", "eth-10g")}
    assert "ε (sampling, adjacency, δ)" in rows
    assert "  of comm: server link wait" not in rows  # no run waited on a shared server link

    c = make_run(tmp_path / "c", server_link_s=0.4)
    assert _rows([a, c])["  of comm: server link wait"] == ["-", "400.00 ms"]


def test_a_sweep_stands_for_its_points_and_terminal_output_marks_the_bound_run(tmp_path, make_run):
    from fedbw.sweeps import sweep

    root = Path(__file__).resolve().parents[2]
    sweep_dir, _ = sweep(root / "experiments" / "quickstart.toml", ["network.profile=home-30,home-80"],
                         [f'output_dir="{tmp_path / "s"}"', "training.rounds=1"], "estimate")
    bound = make_run(tmp_path / "bound", up_s=9.0)
    res = runner.invoke(app, ["compare", str(sweep_dir), str(bound)])
    assert res.exit_code == 0, res.output
    # labelled by what differs (the headers wrap over lines): engine, rounds, profile
    assert "engine=estimate" in res.output and "engine=simulate" in res.output and "profile=home-80" in res.output
    comm = next(line for line in res.output.splitlines() if line.startswith(" comm share"))
    # only the 9 s upload is bound: two sweep points under the 30 % mark (their shares follow the shipped
    # calibration), the bound run above it, marked
    cells = comm.split("%)", 1)[1].split()
    assert cells[1::2] == ["%", "%", "%"] and cells[6:] == ["▲"]
    assert int(cells[0]) < 30 and int(cells[2]) < 30 and int(cells[4]) == 95
    reach = next(line for line in res.output.splitlines() if line.startswith(" time to 80 % accuracy"))
    assert reach.split("accuracy", 1)[1].split() == ["-", "-", "29.10", "s"]  # estimate trains nothing: "-"


def test_epsilon_is_shown_with_its_sampling_adjacency_and_delta(tmp_path):
    from fedbw.sweeps import sweep

    root = Path(__file__).resolve().parents[2]
    sweep_dir, _ = sweep(root / "experiments" / "quickstart.toml", ["privacy.dp.enabled=false,true"],
                         [f'output_dir="{tmp_path}"', "training.rounds=2"], "estimate")
    rows = _rows([sweep_dir])
    plain, dp = rows["ε (sampling, adjacency, δ)"]
    assert plain == "-"
    value, context = dp.split(" ", 1)
    assert float(value) > 0 and context == "(fixed, replace-one, δ=1e-05)"
    assert rows["privacy"][1].startswith("DP central-server-fixed σ=")


def test_compare_reads_the_allreduce_times_a_run_recorded_and_never_re_estimates(tmp_path, make_run, monkeypatch):
    import fedbw.catalog

    a = make_run(tmp_path / "a")
    recorded = dict(_rows([a]))
    monkeypatch.setattr(fedbw.catalog, "get_fabric", lambda name: (_ for _ in ()).throw(AssertionError(name)))
    assert dict(_rows([a])) == recorded  # today's catalog is never asked about a finished run
    (a / "allreduce.json").unlink()  # a run of an older fedbw
    runs = load_runs([a])
    assert not runs.runs[0].fabrics and any("no allreduce.json" in n for n in runs.runs[0].notes)
    assert not any(k.startswith("÷ AllReduce") for k in _rows([a]))
