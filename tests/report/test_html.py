"""report.html: self-contained (every image inline, nothing fetched), one figure per question the data can answer."""

import base64
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fedbw.cli import app
from fedbw.compare import load_runs
from fedbw.report.html import write_report
from fedbw.sweeps import sweep

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "experiments" / "quickstart.toml"
runner = CliRunner()


def _imgs(page: str) -> list[str]:
    return re.findall(r'<img [^>]*src="([^"]+)"', page)


def assert_self_contained(html_path: Path, figures) -> None:
    """Every image is an inline PNG equal to a PNG written beside the page; nothing else is referenced."""
    page = html_path.read_text(encoding="utf-8")
    srcs = _imgs(page)
    assert len(srcs) == len(figures) > 0
    on_disk = {f.path.read_bytes() for f in figures}
    for src in srcs:
        assert src.startswith("data:image/png;base64,")
        png = base64.b64decode(src.split(",", 1)[1])
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and png in on_disk
    for f in figures:
        assert f.path.parent == html_path.parent / "figures" and f.path.stat().st_size > 2000
    lowered = page.lower()
    assert "<script" not in lowered and "<link" not in lowered and "@import" not in lowered
    assert not re.search(r'(src|href)="(?!data:)', page)  # no file, no URL outside the page


def test_a_privacy_sweep_report_has_its_figures_inline(tmp_path):
    sweep_dir, index = sweep(QUICKSTART, ["privacy.secagg.enabled=false,true"],
                             [f'output_dir="{tmp_path}"', "training.rounds=2"], "estimate")
    rep = write_report(load_runs([sweep_dir]), sweep_dir, 0.8, "a title", "fedbw report x")
    assert rep.html_path == sweep_dir / "report.html"
    assert_self_contained(rep.html_path, rep.figures)
    names = {f.path.name for f in rep.figures}
    assert {"breakdown.png", "comm-share.png", "bytes-by-stage.png", "privacy-overhead.png",
            "fl-vs-allreduce.png"} <= names
    assert "time-to-accuracy.png" not in names  # the estimate engine measures no accuracy: no empty chart
    assert "host-share.png" not in names  # no emulate run
    page = rep.html_path.read_text(encoding="utf-8")
    assert "<th>false</th><th>true</th>" in page  # columns labelled by the swept value
    assert "SecAgg+ stock" in page and "share_keys" in page  # the privacy row, SecAgg+'s stages
    assert "Upload per client and round: from" in page  # SecAgg+ moves more bytes: the runs are not alike
    privacy = next(f for f in rep.figures if f.path.name == "privacy-overhead.png")
    assert "×" in privacy.caption or "ratio" in privacy.caption


def test_accuracy_host_share_and_link_series_figures_from_an_emulate_comparison(tmp_path, make_run):
    slow = make_run(tmp_path / "a", engine="emulate", profile="home-30", up_s=2.0, host_shares=(0.01, 0.08, 0.02),
                    series=True)
    fast = make_run(tmp_path / "b", engine="emulate", profile="home-80", up_s=0.5, host_shares=(0.0, 0.01, 0.0))
    runset = load_runs([slow, fast])
    assert [r.label for r in runset.runs] == ["home-30", "home-80"]  # what differs in their configs
    rep = write_report(runset, tmp_path / "out", 0.8, "t", "c")
    assert_self_contained(rep.html_path, rep.figures)
    names = [f.path.name for f in rep.figures]
    assert {"time-to-accuracy.png", "host-share.png", "link-series-a.png"} <= set(names)
    assert "link-series-b.png" not in names  # b has no series file
    page = rep.html_path.read_text(encoding="utf-8")
    # home-80: 0.2 + 0.5 + 0.5 s a round, 90 % first in round 3 → 3.60 s; home-30 never gets there sooner
    assert "80 % accuracy reached first by home-80 after 3.60 s" in page
    assert "1 round(s) host-bound" in page  # a's round 2, 8 % ≥ 5 %
    assert "Every run moved the same bytes (within 1 %)" in page
    assert "Bandwidth-bound (communication above 30 % of the round): home-30, home-80" in page


def test_report_cli_writes_the_page_and_names_a_damaged_line(tmp_path, make_run):
    run = make_run(tmp_path / "run")
    with (run / "records.jsonl").open("a") as fh:
        fh.write('{"kind": "round", "run_id"')  # the run died while writing its last line
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    assert "records.jsonl:11: the last line is cut short" in res.output  # said, not silently dropped
    assert "cut short" in (run / "report.html").read_text(encoding="utf-8")  # and on the page
    assert "report: " in res.output and (run / "breakdown.png").exists()  # the run's own PNGs are redrawn too

    lines = (run / "records.jsonl").read_text().splitlines()
    (run / "records.jsonl").write_text("\n".join([*lines[:3], '{"kind": "round", "round": "two"}', *lines[3:]]))
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "bad")])
    assert res.exit_code == 2 and "records.jsonl:4: not a valid round record" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "bad").exists()


def test_report_refuses_foreign_or_empty_input_with_one_line(tmp_path, make_run):
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "records.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    res = runner.invoke(app, ["report", str(tmp_path / "foreign")])
    assert res.exit_code == 2 and "records.jsonl:1: not a fedbw records file" in res.output
    (tmp_path / "empty").mkdir()
    res = runner.invoke(app, ["report", str(tmp_path / "empty")])
    assert res.exit_code == 2 and "neither a run directory" in res.output
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b", profile="home-80")
    res = runner.invoke(app, ["report", str(a), str(b)])
    assert res.exit_code == 2 and "--out" in res.output
    res = runner.invoke(app, ["report", str(a), str(b), "--out", str(tmp_path / "both"), "--no-html"])
    assert res.exit_code == 0 and not (tmp_path / "both").exists() and "home-80" in res.output


def test_a_sweep_report_says_which_points_are_left_out(tmp_path, make_run):
    from fedbw.results.sweep_index import read_index, write_index

    sweep_dir, _ = sweep(QUICKSTART, ["network.profile=home-30,home-80"],
                         [f'output_dir="{tmp_path}"', "training.rounds=1"], "estimate")
    index = read_index(sweep_dir)
    index.points[1].status, index.points[1].error = "failed", "RunError: link exploded"
    write_index(sweep_dir, index)
    res = runner.invoke(app, ["report", str(sweep_dir), "--no-html"])
    assert res.exit_code == 0, res.output
    assert "point 2 (home-80) is failed (RunError: link exploded); left out" in res.output
    index.points[0].status = "interrupted"
    write_index(sweep_dir, index)
    res = runner.invoke(app, ["report", str(sweep_dir)])
    assert res.exit_code == 2 and "no finished run to show" in res.output


@pytest.mark.parametrize("target, reached", [(0.6, "a"), (0.95, None)])
def test_compare_json_has_time_to_target_and_fabric_ratios(tmp_path, make_run, target, reached):
    a = make_run(tmp_path / "a", up_s=0.1)  # 0.8 s a round: 70 % in round 2 at 1.6 s
    b = make_run(tmp_path / "b", profile="home-80", up_s=3.0, accuracies=(0.1, 0.2, 0.3))
    res = runner.invoke(app, ["compare", str(a), str(b), "--json", "--target-accuracy", str(target)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [d["label"] for d in data] == ["home-30", "home-80"]
    times = [d["time_to_target_s"] for d in data]
    assert times == ([pytest.approx(1.6), None] if reached else [None, None])
    fabrics = {f["fabric"]: f for f in data[0]["fabrics"]}
    assert set(fabrics) == {"nvlink4", "ib-ndr400", "roce-100g", "eth-10g"}
    nv = fabrics["nvlink4"]
    assert nv["fl_round_over_allreduce"] == pytest.approx(data[0]["mean_round_time_s"] / nv["allreduce_s"])
    assert fabrics["eth-10g"]["allreduce_s"] > nv["allreduce_s"]


def test_a_round_policy_run_shows_used_of_sampled_and_its_late_uplink(tmp_path):
    """A run with ``[round]`` over-selection: its rounds table says updates used of clients sampled, and the
    late replies' wasted uplink, in the terminal and in report.html."""
    from fedbw.config import load_config
    from fedbw.runner import run_experiment

    cfg = load_config(QUICKSTART, [f'output_dir="{tmp_path}"', 'engine="estimate"', 'model.name="resnet18"',
                                   'network.mix=[{profile="home-80", share=3}, {profile="mobile-4g", share=1}]',
                                   "training.rounds=2", "round.over_select=1.5"])
    res = run_experiment(cfg)
    assert sum(r.late_clients for r in res.rounds) > 0
    out = runner.invoke(app, ["report", str(res.run_dir)])
    assert out.exit_code == 0, out.output
    page = (Path(res.run_dir) / "report.html").read_text(encoding="utf-8")
    assert "used/sampled" in page and "late repl" in page and "of uplink" in page


def test_a_run_with_availability_shows_its_dropped_clients_and_who_was_on_line(tmp_path):
    """clients.availability: the rounds table says updates used of clients sampled, how many dropped, and how
    many clients were on line at the rounds' starts, in the terminal and in report.html."""
    from fedbw.config import load_config
    from fedbw.runner import run_experiment

    on = tmp_path / "on.csv"  # client 1 leaves 3 s into round 1, client 3 is never on line
    on.write_text("client,start_s,end_s\n0,0,10000\n1,0,3\n2,0,10000\n3,9000,10000\n")
    cfg = load_config(QUICKSTART, [f'output_dir="{tmp_path}"', 'engine="estimate"', "clients.total=4",
                                   "clients.per_round=3", 'clients.compute="synthetic"', "training.rounds=2",
                                   f'clients.availability.file="{on}"'])
    res = run_experiment(cfg)
    assert [r.dropped_clients for r in res.rounds] == [1, 0]
    out = runner.invoke(app, ["report", str(res.run_dir)])
    assert out.exit_code == 0, out.output
    page = (Path(res.run_dir) / "report.html").read_text(encoding="utf-8")
    assert "used/sampled" in page and "1 client(s) dropped" in page
    assert "clients on line at a round&#x27;s start: 2–3" in page or "clients on line at a round's start: 2–3" in page
