"""Studies: the study file's validation, the re-timing arithmetic, and whole studies end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fedbw.cli import app
from fedbw.config import config_from_dict
from fedbw.engines.base import RunResult
from fedbw.errors import ConfigError
from fedbw.netmodel import ClientLink
from fedbw.netmodel.flower import FlowerCosts
from fedbw.plan import build_plan
from fedbw.studies import load_study
from fedbw.links import profile_link
from fedbw.studies.retime import retime, traffic_from_events
from fedbw.config.study import Variant
from fedbw.studies.run import profile_rows, set_ratios

ROOT = Path(__file__).resolve().parents[1]

BASE = """
[base]
engine = "estimate"
output_dir = "{out}"
[base.clients]
total = 5
per_round = 3
[base.training]
rounds = 2
"""

VARIANTS = """
[study]
name = "t"
profiles = ["home-30", "home-80"]

[[study.variants]]
name = "plain"

[[study.variants]]
name = "packed"
set = ["privacy.secagg.enabled=true", "privacy.secagg.mode=\\"packed\\""]
"""


def _write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(BASE.format(out=tmp_path / "runs") + text)
    return p


# ------------------------------------------------------------------------------------------- validation


def test_a_valid_study_resolves_every_variant_without_leaking_overrides(tmp_path):
    s = load_study(_write(tmp_path, VARIANTS + '\n[[study.variants]]\nname = "after"\n'))
    assert [v.name for v in s.variants] == ["plain", "packed", "after"]
    assert s.baseline == "plain" and s.engine == "estimate" and s.profiles == ["home-30", "home-80"]
    assert s.variants[1].config.privacy.secagg.mode == "packed" and s.variants[1].config.privacy.secagg.enabled
    assert not s.variants[2].config.privacy.secagg.enabled  # a variant's set never leaks into the next


def test_cli_overrides_apply_to_every_variant_and_engine_is_checked(tmp_path):
    s = load_study(_write(tmp_path, VARIANTS), ["training.rounds=4"], engine="estimate")
    assert {v.config.training.rounds for v in s.variants} == {4}
    with pytest.raises(ConfigError, match="simulate or estimate"):
        load_study(_write(tmp_path, VARIANTS), engine="emulate")


@pytest.mark.parametrize("text, expected", [
    ("", "no study table"),
    (VARIANTS.replace('name = "packed"', 'name = "plain"'), "unique; plain"),
    (VARIANTS.replace('"home-80"', '"home-8"'), "study.profiles[1]"),
    (VARIANTS.replace('name = "t"', 'name = "t"\nprofile = "home-30"'), "study.profile: unknown key"),
    (VARIANTS.replace('name = "t"', 'name = "t"\nbaseline = "nope"'), "baseline 'nope' is not a variant"),
    (VARIANTS.replace('"privacy.secagg.enabled=true"', '"privacy.secagg.enabled"'),
     "study.variants.1.set: 'privacy.secagg.enabled': write key=value"),
    (VARIANTS.replace('"privacy.secagg.enabled=true"', '"privacy.secagg.enabled=true", "clients.per_round=9"'),
     "study.variants[1] (packed): 1 problem(s):\n  (top level): clients.per_round (9) cannot exceed"),
    (VARIANTS.replace('"privacy.secagg.enabled=true"', '"privacy.secagg.enabld=true"'),
     "study.variants[1] (packed): 1 problem(s):\n  privacy.secagg.enabld: unknown key"),
    (VARIANTS.replace('"privacy.secagg.enabled=true"', '"clients.total.x=3"'),
     "study.variants[1] (packed): --set 'clients.total.x=3': 'total' is a value, not a section"),
    (VARIANTS.replace('name = "plain"', 'name = "plain"\nset = ["engine=\\"simulate\\""]'),
     "every variant runs on the study's engine"),
    (VARIANTS.replace("[study]", "[base.model]\nname = \"resnet5\"\n[study]"), "s.toml: base: model.name: unknown model"),
    (VARIANTS.replace('"privacy.secagg.enabled=true"', '"privacy.dp.enabled=true", "privacy.dp.max_epsilon=0.01"'),
     "study.variants[1] (packed): privacy.dp.max_epsilon (0.01) is below the ε of a single round"),
])
def test_bad_study_files_say_what_and_where(tmp_path, text, expected):
    with pytest.raises(ConfigError) as exc:
        load_study(_write(tmp_path, text))
    assert expected in str(exc.value)


def test_cli_prints_one_line_and_exits_2(tmp_path):
    bad = _write(tmp_path, VARIANTS.replace('"home-80"', '"home-8"'))
    res = CliRunner().invoke(app, ["study", str(bad)])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "study.profiles[1]" in res.output
    res = CliRunner().invoke(app, ["study", str(tmp_path / "missing.toml")])
    assert res.exit_code == 2 and "not found" in res.output
    res = CliRunner().invoke(app, ["study", str(ROOT / "experiments/quickstart.toml")])
    assert res.exit_code == 2 and "no study table (this looks like an experiment config: use `fedbw run`)" in res.output


# ------------------------------------------------------------------------------------------- re-timing


def _events():
    """Two rounds: round 1 plain (one stage), round 2 two stages; clients 0 and 1, then 1 and 2."""
    msg = lambda r, c, stage, down, up, comp=None: {"event": "message", "round": r, "client_id": c, "stage": stage,
                                                   "bytes_down": down, "bytes_up": up, "compute_s": comp}
    return [
        {"event": "start"},
        {"event": "round_start", "round": 1, "clients": [0, 1]},
        msg(1, 0, "fit", 1e6, 2e6, 0.5), msg(1, 1, "fit", 1e6, 1e6, 1.0),
        {"event": "round_end", "round": 1, "loss": 1.0, "accuracy": 0.5, "epsilon": None},
        {"event": "round_start", "round": 2, "clients": [1, 2]},
        msg(2, 1, "setup", 1e3, 1e3), msg(2, 2, "setup", 1e3, 3e3),
        msg(2, 2, "collect_masked_vectors", 2e6, 4e6, 0.25), msg(2, 1, "collect_masked_vectors", 2e6, 4e6, 0.75),
        {"event": "round_end", "round": 2, "loss": 0.5, "accuracy": 0.75, "epsilon": None},
        {"event": "round_start", "round": 3, "clients": [0, 1]},  # unfinished: ignored
        msg(3, 0, "fit", 1e6, 2e6, 0.5),
    ]


def test_retime_lays_measured_bytes_on_one_link_by_hand():
    link = ClientLink(up_payload_mbps=8.0, down_payload_mbps=16.0, rtt_s=0.02)  # 1 MB/s up, 2 MB/s down
    r1, r2 = traffic_from_events(_events())
    assert (r1.round, r1.clients, r2.clients) == (1, [0, 1], [1, 2])
    t1 = retime(r1, link)
    # client 0: 0.01 + 0.5 s down, 0.5 s compute, 0.01 + 2 s up = 3.02 s; client 1: 0.51 + 1.0 + 1.01 = 2.52 s
    assert t1.round_time_s == pytest.approx(3.02)
    assert (t1.comm_time_s, t1.compute_time_s) == (pytest.approx(2.52), pytest.approx(0.5))
    t2 = retime(r2, link)
    # setup barrier: client 2, 0.0105 + 0.013 s; collect: client 1, 1.01 + 0.75 + 4.01 s (slowest compute)
    assert t2.stage_time_s("setup") == pytest.approx(0.01 + 0.0005 + 0.01 + 0.003)
    assert t2.round_time_s == pytest.approx(0.0235 + 1.01 + 0.75 + 4.01)
    assert r2.bytes_per_client() == (pytest.approx((4e6 + 1e3 + 4e6 + 3e3) / 2), pytest.approx(2e6 + 1e3))


def test_profile_rows_average_steady_rounds_and_ratio_to_the_baseline():
    traffic = traffic_from_events(_events())
    cfg = config_from_dict({"name": "v"})
    rows = profile_rows(Variant("v", cfg, ()), traffic, ["home-30", "home-80"], RunResult(None))
    half = profile_rows(Variant("base", cfg, ()), traffic[:1], ["home-30", "home-80"], RunResult(None))
    set_ratios(rows + half, "base")
    slow, fast = rows
    assert slow.steady_rounds == [2] and half[0].steady_rounds == [1]  # rounds ≥ 2 when there are any
    assert slow.round1_time_s == pytest.approx(retime(traffic[0], profile_link("home-30").model()).round_time_s)
    assert slow.round_time_s == pytest.approx(retime(traffic[1], profile_link("home-30").model()).round_time_s)
    assert slow.round_time_s > fast.round_time_s and slow.bytes_up_per_client == fast.bytes_up_per_client
    assert slow.uplink_ratio == pytest.approx(4.002e6 / 1.5e6)
    assert slow.round_ratio == pytest.approx(slow.round_time_s / half[0].round_time_s)
    assert slow.comm_fraction == pytest.approx(slow.comm_time_s / slow.round_time_s)


def test_profile_link_is_the_link_the_plan_gives_that_profile():
    plan = build_plan(config_from_dict({"engine": "estimate", "network": {"profile": "home-50"}}))
    assert profile_link("home-50").model() == plan.clients[0].link


# ------------------------------------------------------------------------------------------- end to end


def test_estimate_study_end_to_end(tmp_path):
    from fedbw.config.accounting import config_epsilons

    text = VARIANTS + ('\n[[study.variants]]\nname = "stock+dp"\nset = ["privacy.secagg.enabled=true", '
                       '"privacy.dp.enabled=true", "privacy.dp.mode=\\"central-client-fixed\\"", '
                       '"privacy.dp.noise_multiplier=0.2"]\n')
    res = CliRunner().invoke(app, ["study", str(_write(tmp_path, text))])
    assert res.exit_code == 0, res.output
    (study_dir,) = (tmp_path / "runs").iterdir()
    assert study_dir.name.startswith("t-")
    data = json.loads((study_dir / "study.json").read_text())
    rows = {(r["variant"], r["profile"]): r for r in data["rows"]}
    assert len(rows) == 6 and (study_dir / "study.png").stat().st_size > 0
    for p in ("home-30", "home-80"):
        assert rows[("packed", p)]["uplink_ratio"] <= 1.02
        assert rows[("stock+dp", p)]["uplink_ratio"] == pytest.approx(2.0, rel=0.01)  # int64 masked vectors
    # a faster link moves the bytes sooner; the round need not be shorter: Flower's 3 s poll grids are
    # anchored at each reply's "Sent", so a reply sent earlier can land its next pull just before the
    # next push instead of just after it — at most one SuperNode poll per stage (fit, evaluate) later
    assert rows[("plain", "home-80")]["comm_time_s"] < rows[("plain", "home-30")]["comm_time_s"]
    poll_s = FlowerCosts().supernode_idle_poll_s
    assert rows[("plain", "home-80")]["round_time_s"] <= rows[("plain", "home-30")]["round_time_s"] + 2 * poll_s
    assert rows[("plain", "home-30")]["framework_time_s"] > 3.0
    # the framework time by part: the critical client's parts of the deployment model sum to at most
    # the whole (the whole also holds each stage's span beyond that client: the server's work)
    from fedbw.flower_protocol import FRAMEWORK_PARTS

    for r in rows.values():
        parts = r["framework_parts_s"]
        assert set(FRAMEWORK_PARTS) <= set(parts) and parts["clientapp_start_s"] > 0
        assert sum(parts[k] for k in FRAMEWORK_PARTS) <= r["framework_time_s"] + 1e-9
    s = load_study(_write(tmp_path, text))
    assert rows[("stock+dp", "home-30")]["epsilon"] == pytest.approx(config_epsilons(s.variants[2].config)[-1])
    assert rows[("plain", "home-30")]["epsilon"] is None
    # every ε comes with what it means: the sampling and adjacency it was accounted for, and its δ
    dp_row = rows[("stock+dp", "home-30")]
    assert (dp_row["epsilon_sampling"], dp_row["epsilon_adjacency"], dp_row["epsilon_delta"]) == (
        "fixed", "replace-one", 1e-5)
    assert rows[("plain", "home-30")]["epsilon_sampling"] is None
    assert dp_row["secagg_clipped"] is None  # estimate measures nothing: no counts, not zeros
    assert all(Path(v["run_dir"]).parent == study_dir for v in data["variants"])
    md = (study_dir / "study.md").read_text()
    assert "| variant | profile | up/client |" in md and "| packed | home-80 |" in md
    assert "| ε terms | clipped / wrapped |" in md and "| fixed, replace-one, δ=1e-05 |" in md
    assert "packed" in res.output and "study.md" in res.output


@pytest.mark.slow
def test_simulate_study_measures_packed_secagg_within_the_uplink_target(tmp_path):
    """Two variants, one round each, through Flower's Simulation Engine: measured bytes, re-timed."""
    text = (f'[base]\nengine = "simulate"\ndevice = "cpu"\noutput_dir = "{tmp_path / "runs"}"\n'
            "[base.clients]\ntotal = 3\nper_round = 3\n[base.training]\nrounds = 1\nlocal_epochs = 1\n" + VARIANTS)
    (tmp_path / "s.toml").write_text(text)
    s = load_study(tmp_path / "s.toml")
    assert s.engine == "simulate" and s.variants[0].config.training.rounds == 1
    from fedbw.studies import run_study

    res = run_study(s)
    rows = {(r.variant, r.profile): r for r in res.rows}
    plain, packed = rows[("plain", "home-30")], rows[("packed", "home-30")]
    assert plain.steady_rounds == [1] and plain.accuracy is not None
    assert 1.0 < packed.uplink_ratio <= 1.02  # the masked vector, packed, vs the plain float32 update
    # the slower uplink moves the masked vectors later. The round need not follow: at this size every
    # SecAgg+ stage lands on Flower's poll grids, and the modelled round is not monotonic in the link rate
    # (one run gave home-80 a round 1 s longer than home-30's); its framework time is there either way
    assert packed.comm_time_s > rows[("packed", "home-80")].comm_time_s
    assert packed.framework_time_s > 3.0 and packed.round_time_s > packed.comm_time_s
    # the re-timing used the bytes the apps measured, not the estimate's prediction
    events = (res.run_dirs["packed"] / "events.jsonl").read_text()
    assert '"stage": "collect_masked_vectors"' in events
    # the ServerApp counted what SecAgg+ clipped and wrapped in every round (the study sums the records' counts)
    ends = [json.loads(line) for line in events.splitlines() if '"round_end"' in line]
    assert ends and all(e["privacy"]["secagg_wrapped"] == 0 and e["privacy"]["secagg_clipped"] >= 0 for e in ends)
    assert {p.name for p in res.files} == {"study.json", "study.md", "study.png", "study.html"}


@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "experiments").glob("*.toml")
                                         if "\n[study]" in p.read_text()), ids=lambda p: p.name)
def test_shipped_studies_validate(path):
    s = load_study(path)
    assert len(s.variants) >= 2 and s.profiles


GRID = '\n[study.grid]\n"clients.per_round" = [3, 5]\n"model.name" = ["small-cnn"]\n'


def test_a_grid_runs_every_variant_in_every_cell_with_the_cell_before_the_variants_own_set(tmp_path):
    s = load_study(_write(tmp_path, VARIANTS + GRID))
    assert [v.name for v in s.variants] == ["plain@3-small-cnn", "packed@3-small-cnn", "plain@5-small-cnn",
                                            "packed@5-small-cnn"]
    assert [v.kind for v in s.variants] == ["plain", "packed"] * 2 and s.baseline == "plain"
    assert [v.config.clients.per_round for v in s.variants] == [3, 3, 5, 5]
    assert s.variants[3].overrides[:2] == ("clients.per_round=5", 'model.name="small-cnn"')
    assert s.grid == {"clients.per_round": [3, 5], "model.name": ["small-cnn"]}


@pytest.mark.parametrize("grid, expected", [
    ('"clients.per_round" = []', "at least one value"),
    ('"clients.per_round" = [2, 2]', "a value appears twice"),
    ('"clients.per_round" = [3, 9]', "study.variants[0] (plain@9): 1 problem(s):\n  (top level): clients.per_round (9)"),
    ('"clients.per_rond" = [2]', "clients.per_rond: unknown key"),
    ('"clients.per_round" = [[2]]', "values must be numbers, strings or booleans"),
])
def test_bad_grids_say_what_and_where(tmp_path, grid, expected):
    with pytest.raises(ConfigError) as exc:
        load_study(_write(tmp_path, VARIANTS + "\n[study.grid]\n" + grid + "\n"))
    assert expected in str(exc.value)


def test_a_grid_study_compares_each_variant_with_the_baseline_of_its_own_cell(tmp_path):
    res = CliRunner().invoke(app, ["study", str(_write(tmp_path, VARIANTS.replace(', "home-80"', "") + GRID))])
    assert res.exit_code == 0, res.output
    (study_dir,) = (tmp_path / "runs").iterdir()
    data = json.loads((study_dir / "study.json").read_text())
    assert data["grid"] == {"clients.per_round": [3, 5], "model.name": ["small-cnn"]}
    rows = {(r["kind"], r["cell"]["clients.per_round"]): r for r in data["rows"]}
    assert len(rows) == 4 and (study_dir / "study.png").stat().st_size > 0
    for n in (3, 5):
        plain, packed = rows[("plain", n)], rows[("packed", n)]
        assert plain["round_ratio"] == 1.0 and plain["uplink_ratio"] == 1.0  # its own cell's baseline
        assert packed["round_ratio"] == pytest.approx(packed["round_time_s"] / plain["round_time_s"])
    md = (study_dir / "study.md").read_text()
    assert "| round vs plain |" in md and "| packed@5-small-cnn | home-30 |" in md
    page = (study_dir / "study.html").read_text()  # the figure first, then every row, one self-contained file
    assert page.index("data:image/png;base64,") < page.index("<td>packed@5-small-cnn</td>")
    assert "round vs plain" in page and "against the baseline of its own cell" in page


def test_validate_names_a_grid_studys_variants_once_and_its_cells(tmp_path):
    res = CliRunner().invoke(app, ["validate", str(_write(tmp_path, VARIANTS + GRID))])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "2 variants (plain, packed) in every cell of clients.per_round over 3, 5; model.name over small-cnn" in text
    assert "(4 runs)" in text and "plain@3" not in text


def test_a_study_warns_of_cells_whose_replies_flower_would_drop(tmp_path):
    # 120 M parameters, stock SecAgg+: a 960 MB masked vector, 13 min on mobile-4g's uplink, 4 on home-30's
    from fedbw.studies.limits import study_lost_replies

    text = (VARIANTS.replace('["home-30", "home-80"]', '["mobile-4g", "home-80"]')
            .replace("[study]", '[base.model]\nname = "params=120M"\n[study]')
            + '\n[[study.variants]]\nname = "stock"\nset = ["privacy.secagg.enabled=true"]\n')
    (sentence, *more) = study_lost_replies(load_study(_write(tmp_path, text)))
    assert sentence.startswith("variant packed on mobile-4g: 5 of 5 clients' collect_masked_vectors reply")
    assert any(s.startswith("variant stock on mobile-4g") for s in more)
    assert not any("plain" in s or "home-80" in s for s in [sentence, *more])


def test_a_study_row_gives_each_stages_bytes_and_the_chance_flower_completes_the_round(tmp_path):
    """Issue 34.1's cell columns: bytes per client per stage (the masked vectors are where stock SecAgg+'s
    int64 expansion lands) and, with clients dropping after the share exchange, the chance the round
    completes at all (Flower's threshold rule: 3 of 10 gone with 3 shares ends most rounds)."""
    from fedbw.engines.estimate import secagg_completes

    text = BASE.replace("total = 5\nper_round = 3", "total = 20\nper_round = 10") + """
[study]
name = "t"
profiles = ["home-30"]

[[study.variants]]
name = "plain"

[[study.variants]]
name = "stock"
set = ["privacy.secagg.enabled=true", "privacy.secagg.mode=\\"stock\\""]

[[study.variants]]
name = "drop30"
set = ["privacy.secagg.enabled=true", "privacy.secagg.mode=\\"packed\\"", "privacy.secagg.dropout=0.3"]
"""
    path = tmp_path / "s.toml"
    path.write_text(text.format(out=tmp_path / "runs"))
    res = CliRunner().invoke(app, ["study", str(path)])
    assert res.exit_code == 0, res.output
    (study_dir,) = (tmp_path / "runs").iterdir()
    rows = {r["variant"]: r for r in json.loads((study_dir / "study.json").read_text())["rows"]}
    stock = rows["stock"]["bytes_per_stage"]
    assert list(stock) == ["setup", "share_keys", "collect_masked_vectors", "unmask"]
    assert sum(up for _, up in stock.values()) == pytest.approx(rows["stock"]["bytes_up_per_client"])
    assert sum(down for down, _ in stock.values()) == pytest.approx(rows["stock"]["bytes_down_per_client"])
    (plain_stage,) = rows["plain"]["bytes_per_stage"].values()
    assert stock["collect_masked_vectors"][1] == pytest.approx(2 * plain_stage[1], rel=0.01)
    assert rows["plain"]["round_completes"] is None and rows["stock"]["round_completes"] is None
    s = load_study(path)
    plan = build_plan(s.variants[2].config)
    assert rows["drop30"]["round_completes"] == pytest.approx(secagg_completes(plan, 2, 3))
    assert 0 < rows["drop30"]["round_completes"] < 0.5
