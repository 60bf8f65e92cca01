"""experiments/: every config validates and runs; every experiment has a docs page with its figure, its
generated table and the command that made them; every committed figure was drawn from the JSON committed
beside it (its PNG carries that JSON's SHA-256)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fedbw.cli import app
import fedbw.report.doc_tables  # noqa: F401 - registers the generated tables
from fedbw.report.doc_blocks import RESULTS, TABLES
from fedbw.report.experiment_plots import FIGURES, SHA_KEY, draw
from fedbw.report.experiment_tables import (datacenter_markdown, local_steps_markdown, run_markdown, steady,
                                            time_to_target)

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "experiments"
EXPERIMENTS = sorted(p.stem for p in (ROOT / "experiments").glob("*.toml"))
#: experiments whose page lives elsewhere in docs/, with its own generated table and no figure of this module's
OWN_PAGES = {"privacy-overhead": ROOT / "docs" / "privacy-overhead.md",
             "privacy-at-scale": ROOT / "docs" / "privacy-overhead.md",
             "dp-cohorts": ROOT / "docs" / "privacy-overhead.md"}


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_every_experiment_has_a_figure_a_table_and_a_page() -> None:
    assert len(EXPERIMENTS) >= 7
    assert set(FIGURES) == set(EXPERIMENTS) - set(OWN_PAGES), \
        "register a new experiment in fedbw/report/experiment_plots.py FIGURES"
    index = (PAGES / "README.md").read_text(encoding="utf-8")
    for name, page in OWN_PAGES.items():
        assert f"experiments/{name}.toml" in page.read_text(encoding="utf-8") and f"](../{page.name})" in index
    for name in FIGURES:
        page = (PAGES / f"{name}.md").read_text(encoding="utf-8")
        assert f"](img/{name}.png)" in page, name
        assert f"<!-- fedbw-table: experiments.{name} -->" in page and f"experiments.{name}" in TABLES, name
        assert f"experiments/{name}.toml" in page, f"{name}: the page shows the command that runs the config"
        assert f"benchmarks/experiments.py {name}" in page, f"{name}: the page says how it was made"
        assert f"]({name}.md)" in index, f"docs/experiments/README.md does not list {name}"


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_config_validates(name: str) -> None:
    result = _cli("validate", f"experiments/{name}.toml")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ok "), result.output


def test_validate_names_the_variant_of_a_broken_study() -> None:
    result = _cli("validate", "experiments/local-steps.toml", "--set", "training.rounds=0")
    assert result.exit_code == 2
    assert "training.rounds" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_each_committed_figure_was_drawn_from_its_committed_json(name: str) -> None:
    from PIL import Image

    result = ROOT / RESULTS / FIGURES[name][0]
    png = PAGES / "img" / f"{name}.png"
    assert result.is_file(), f"no data: `.venv/bin/python benchmarks/experiments.py {name}` writes {result}"
    assert png.is_file(), f"no figure: `.venv/bin/python benchmarks/experiments.py --plots-only {name}`"
    stamp = Image.open(png).text.get(SHA_KEY)
    assert stamp == hashlib.sha256(result.read_bytes()).hexdigest(), \
        f"{png.name} was drawn from other data: `.venv/bin/python benchmarks/experiments.py --plots-only {name}`"


# ------------------------------------------------------------------------- renderers on known data


def _client(cid: int, rnd: int, profile: str, down: float, comp: float, up: float, fw: float) -> dict[str, Any]:
    return {"client_id": cid, "round": rnd, "profile": profile, "bytes_up": 1000, "t_down_s": down,
            "t_compute_s": comp, "t_up_s": up, "t_framework_s": fw, "t_total_s": down + comp + up + fw}


def _round(rnd: int, t: float, comm: float, acc: float | None) -> dict[str, Any]:
    return {"round": rnd, "round_time_s": t, "comm_time_s": comm, "compute_time_s": 1.0, "framework_time_s": 0.5,
            "comm_fraction": comm / t, "bytes_up_total": 4000, "accuracy": acc, "loss": 0.5}


RUN = {"engine": "simulate", "command": "fedbw run experiments/x.toml", "started_utc": "2026-12-01T00:00:00Z",
       "clients": [_client(0, 1, "home-30", 1.0, 2.0, 5.0, 2.0), _client(1, 1, "home-80", 0.5, 2.0, 1.5, 1.0),
                   _client(0, 2, "home-30", 1.0, 2.0, 3.0, 2.0)],
       "rounds": [_round(1, 10.0, 6.0, 0.5), _round(2, 8.0, 4.0, 0.9)],
       "environment": {"platform": "test-box", "cpu_count": 2, "python": "3.11", "packages": {"flwr": "1.42"}}}


def test_run_table_means_per_profile_slowest_first() -> None:
    text = run_markdown(RUN)
    rows = [line for line in text.splitlines() if line.startswith("| home-")]
    assert rows[0].startswith("| home-30 | 2 |") and rows[1].startswith("| home-80 | 1 |")
    assert "| 56 % |" in rows[0]  # mean (download + upload) 5 s over mean client time 9 s
    assert "| 40 % |" in rows[1]  # (0.5 + 1.5) / 5
    assert "`fedbw run experiments/x.toml`, started 2026-12-01T00:00:00Z on test-box, 2 CPU(s)" in text
    assert [r["round"] for r in steady(RUN["rounds"])] == [2]


def test_time_to_target_sums_rounds_until_the_first_that_reaches_it() -> None:
    curve = [{"round": 1, "round_time_s": 2.0, "accuracy": 0.5}, {"round": 2, "round_time_s": 3.0, "accuracy": None},
             {"round": 3, "round_time_s": 4.0, "accuracy": 0.92}, {"round": 4, "round_time_s": 4.0, "accuracy": 0.95}]
    assert time_to_target(curve, 0.9) == (3, 9.0)
    assert time_to_target(curve, 0.99) == (None, None)


def test_local_steps_table_shows_rounds_and_time_to_target() -> None:
    row = {"round_time_s": 3.0, "compute_time_s": 1.0, "accuracy": 0.95}
    data = {"profiles": ["home-30", "home-80"], "target_accuracy": 0.9, "curve_profile": "home-30",
            "variants": [{"name": "steps-5", "set": ["training.local_steps=5"]}],
            "rows": [{"variant": "steps-5", "profile": p, **row} for p in ("home-30", "home-80")],
            "curves": {"steps-5": [{"round": 1, "round_time_s": 2.0, "accuracy": 0.8},
                                   {"round": 2, "round_time_s": 2.5, "accuracy": 0.91}]}}
    line = next(x for x in local_steps_markdown(data).splitlines() if x.startswith("| steps-5"))
    assert line.split(" | ")[1] == "5" and line.split(" | ")[-2] == "2"  # local steps; first round ≥ 90 %


def test_deadlines_table_counts_what_each_policy_left_out_and_its_time_to_target_over_seeds() -> None:
    from fedbw.report.experiment_tables import deadlines_markdown, time_to_target_interval

    def rnd(i: int, t: float, acc: float, dropped: int = 0, late: int = 0) -> dict:
        return {"round": i, "round_time_s": t, "round_interval_s": [t - 1, t + 2], "accuracy": acc,
                "num_clients": 6, "replies": 6 - dropped - late, "dropped_clients": dropped, "late_clients": late,
                "wasted_bytes_up": 1e6 * late}

    wait = [rnd(1, 10.0, 0.5), rnd(2, 50.0, 0.8, dropped=1), rnd(3, 10.0, 0.9)]  # 70 s to 85 %
    wait_2 = [rnd(1, 10.0, 0.86), rnd(2, 10.0, 0.9)]  # 10 s
    cut = [rnd(1, 10.0, 0.5), rnd(2, 15.0, 0.8, late=1), rnd(3, 10.0, 0.86)]
    never = [rnd(1, 10.0, 0.5)]
    assert time_to_target_interval(wait, 0.85) == (67.0, 76.0) and time_to_target_interval(wait, 0.95) is None
    cmd = "fedbw run experiments/deadlines.toml"
    data = {"target_accuracy": 0.85, "environment": {}, "seeds": [0, 1, 2], "policies": [
        {"policy": "wait-for-all", "runs": [{"seed": 0, "command": cmd, "rounds": wait},
                                            {"seed": 1, "command": cmd, "rounds": wait_2},
                                            {"seed": 2, "command": cmd, "rounds": wait}]},
        {"policy": "deadline-15s", "runs": [{"seed": 0, "command": cmd, "rounds": cut},
                                            {"seed": 1, "command": cmd, "rounds": never},
                                            {"seed": 2, "command": cmd, "rounds": [], "error": "it failed"}]},
        {"policy": "broken", "runs": [{"seed": 0, "command": cmd, "rounds": [], "error": "it failed"}]}]}
    lines = {x.split(" | ")[0].lstrip("| "): x.split(" | ") for x in deadlines_markdown(data).splitlines()
             if x.startswith("| wait") or x.startswith("| deadline") or x.startswith("| broken")}
    assert lines["broken"][1:3] == ["0 of 1", "failed: it failed"]  # a policy whose runs failed says so
    assert lines["wait-for-all"][1] == "3" and lines["deadline-15s"][1] == "2 of 3"
    assert lines["wait-for-all"][3:6] == ["46 / 48", "2", "0"]  # used / sampled, dropped, late over all seeds
    assert lines["deadline-15s"][3:7] == ["23 / 24", "0", "1", "500.00 kB"]  # wasted: per run
    # time to 85 %: the median over seeds and their range; the widened range uses each round's bounds
    assert lines["wait-for-all"][7] == "3 [1–3]" and lines["wait-for-all"][8] == "1.2 min [0.2–1.2]"
    assert lines["wait-for-all"][9] == "0.1–1.3 min"  # 9 s (seed 1) to 76 s (seeds 0, 2)
    assert lines["deadline-15s"][8] == "0.6 min (1 of 2 seeds)"  # a seed that never reached it is said so
    # a run that failed in a policy with others is named under the table, with its reason; an all-failed
    # policy's reason is in its row already
    text = deadlines_markdown(data)
    assert "Failed, left out of its row: deadline-15s, seed 2: it failed" in text
    assert "broken, seed 0" not in text
    assert "Rounds abandoned" not in text
    # a round SecAgg+ halted used no update: the run went on, and the table counts it under the row
    halted = {**rnd(2, 50.0, 0.5), "abandoned": True, "extra": {"secagg_halted": "SecAgg+ halted: …"}}
    data["policies"][0]["runs"][1]["rounds"] = [rnd(1, 10.0, 0.5), halted, rnd(3, 10.0, 0.86)]
    text = deadlines_markdown(data)
    line = next(x.split(" | ") for x in text.splitlines() if x.startswith("| wait"))
    assert line[3] == "46 / 54"  # the halted round's 6 replies were not used
    assert "Rounds abandoned, the server keeping its model (the run goes on, as Flower's does): wait-for-all: 1 " \
           "(SecAgg+ halted; seed 1)." in text


def test_datacenter_ratio_is_fl_comm_over_one_allreduce() -> None:
    profile = {"profile": "home-30", "bytes_up_per_client": 4000, "t_down_s": 1.0, "t_up_s": 3.0,
               "round_time_s": 5.0}
    fabric = {"fabric": "nvlink4", "time_s": 0.001, "size_bytes": 4000, "ranks": 8}
    data = {"device_profile": "desktop-gpu",
            "models": [{"model": "m", "params": 1000, "clients_per_round": 8, "profiles": [profile],
                        "fabrics": [fabric]}]}
    text = datacenter_markdown(data)
    assert "| 4,000× | 4,000× |" in text and "at 4 B per value" in text


def test_draw_stamps_the_png_with_the_sha_of_the_json_it_read(tmp_path: Path) -> None:
    from PIL import Image

    data = {"models": [{"model": "m", "profiles": [{"profile": "home-30", "t_down_s": 1.0, "t_up_s": 2.0}],
                        "fabrics": [{"fabric": "nvlink4", "time_s": 0.01}]}]}
    src = tmp_path / RESULTS / FIGURES["datacenter-vs-federated"][0]
    src.parent.mkdir(parents=True)
    src.write_text(json.dumps(data), encoding="utf-8")
    png = draw(tmp_path, "datacenter-vs-federated", tmp_path / "out.png")
    assert Image.open(png).text[SHA_KEY] == hashlib.sha256(src.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------- every one runs


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_runs_on_the_estimate_engine(name: str, tmp_path: Path) -> None:
    """The whole pipeline of each config (plan, engine, records, report), on the engine that runs in seconds;
    benchmarks/experiments.py runs each on the engine it names. A study runs one round per row (its configs
    plan 3 to 15): every row (privacy-at-scale has 396, cohorts up to 1,000) still goes through every
    step, and what a row's later rounds add is the engines' own tests' to check."""
    config = f"experiments/{name}.toml"
    is_study = "study" in tomllib.loads((ROOT / config).read_text(encoding="utf-8"))
    out = f'output_dir="{tmp_path}"'
    args = ["study", config, "--set", "training.rounds=1"] if is_study else ["run", config]
    result = _cli(*args, "--engine", "estimate", "--set", out)
    assert result.exit_code == 0, result.output
    written = list(tmp_path.rglob("study.json" if is_study else "records.jsonl"))
    assert len(written) == 1, written


def test_a_stopped_or_host_bound_run_says_so_in_its_table() -> None:
    from fedbw.report.experiment_tables import host_bound_note, stopped_note

    stopped = {**RUN, "summary": {"stopped_early": "RunError: emulate stopped after 2 of 3 round(s): X\nmore"}}
    text = run_markdown(stopped)
    assert "**Stopped early**: RunError: emulate stopped after 2 of 3 round(s): X (the table" in text
    assert "more" not in text and stopped_note(RUN) == ""
    rounds = [{"round": 1, "host_bound": True}, {"round": 2, "host_bound": False}]
    assert host_bound_note(rounds).startswith("**Round(s) 1 host-bound** (◆)")
    assert host_bound_note([rounds[0]]).startswith("**Every emulated round host-bound**")
    assert host_bound_note([rounds[1]]) == ""


def test_a_failed_runs_reason_is_fedbws_one_line_error_unwrapped() -> None:
    """benchmarks/experiments.py keeps why a run failed: fedbw's `error: …` line, which the console wraps at 160
    columns, joined up to the simulation log's tail; without one, the output's last line."""
    from tests.benchmark_module import load_benchmark

    reason = load_benchmark("experiments").failure_reason
    out = ("fedbw run x failed (1):\n\nerror: simulate stopped after 13 of 40 round(s): RunError: round 14: SecAgg+\n"
           "halted: a client kept fewer\n--- runs/x/simulation.log (last lines) ---\nINFO: noise\nfinished rounds are kept")
    assert reason(out) == ("error: simulate stopped after 13 of 40 round(s): RunError: round 14: SecAgg+ halted: a "
                           "client kept fewer")
    assert reason("fedbw run x failed (1):\nTraceback\nValueError: bad") == "ValueError: bad"
