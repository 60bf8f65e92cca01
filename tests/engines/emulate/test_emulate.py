"""emulate without Flower: links from the plan, faults, stage naming, attribution, app checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedbw.config import config_from_dict
from fedbw.engines.emulate.attribution import match_messages, message_times, round_records
from fedbw.flower_protocol import FRAMEWORK_PARTS
from fedbw.engines.emulate.clients import clients_for_plan, clients_for_profile, drops_for_plan
from fedbw.engines.emulate.fedbw_app import write_fedbw_app
from fedbw.engines.foreign_app import check_app_dir
from fedbw.engines.emulate.federation import MessageMeasure
from fedbw.shaper.series import Transfer
from fedbw.engines.emulate.supernode_log import MessageSpan
from fedbw.errors import ConfigError
from fedbw.plan import build_plan

FIXTURE_APP = Path(__file__).parent.parent / "fixtures" / "numpy_app"


def _plan(**sections):
    base = {"engine": "emulate", "clients": {"total": 4, "per_round": 4}, "network": {"profile": "home-30"}}
    base.update(sections)
    return build_plan(config_from_dict(base))


def test_links_are_the_plans_payload_rates_rtt_and_jitter() -> None:
    plan = _plan()
    links = clients_for_plan(plan)
    pc, link = plan.clients[0], links[0].link
    assert link.up_mbps == pytest.approx(pc.link.up_payload_mbps)
    assert link.down_mbps == pytest.approx(pc.link.down_payload_mbps)
    assert link.latency_up_ms + link.latency_down_ms == pytest.approx(pc.access.rtt_ms)
    assert link.jitter_up_ms + link.jitter_down_ms == pytest.approx(pc.access.jitter_ms)
    assert [c.client_id for c in links] == [0, 1, 2, 3]


def test_stragglers_and_flaps_change_only_their_client() -> None:
    """Stragglers and flaps are in the plan's links (every engine sees them); emulate's shaper gets them."""
    plan = _plan(faults={"stragglers": [{"client": 1, "link_factor": 0.5}],
                         "flaps": [{"client": 2, "at_s": 10, "duration_s": 3, "direction": "up"}]})
    links = {c.client_id: c.link for c in clients_for_plan(plan)}
    base_up, base_down = plan.clients[0].link.up_payload_mbps, plan.clients[0].link.down_payload_mbps
    assert links[1].up_mbps == pytest.approx(base_up * 0.5) and plan.clients[1].profile == "home-30×0.5"
    assert links[2].up_trace == ((0.0, pytest.approx(base_up)), (10.0, 0.0), (13.0, pytest.approx(base_up)))
    assert links[2].down_trace == ((0.0, pytest.approx(base_down)),) and plan.clients[2].profile == "home-30~flaps"
    assert links[0].up_trace == () and links[0].up_mbps == pytest.approx(base_up)


def test_overlapping_flaps_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="overlap"):
        _plan(faults={"flaps": [{"client": 1, "at_s": 10, "duration_s": 5}, {"client": 1, "at_s": 12, "duration_s": 1}]})


def test_drops_map_stage_names_to_train_message_order() -> None:
    plan = _plan(privacy={"secagg": {"enabled": True, "num_shares": 3, "reconstruction_threshold": 2}},
                 faults={"drops": [{"client": 3, "round": 2, "stage": "collect_masked_vectors"}]})
    (d,) = drops_for_plan(plan)
    assert (d.client, d.round, d.stage_index) == (3, 2, 2)


@pytest.mark.parametrize("faults, match", [
    ({"drops": [{"client": 9, "round": 1}]}, "faults.drops names client 9"),
    ({"drops": [{"client": 1, "round": 1, "stage": "unmask"}]}, "does not exist in this run"),
    ({"drops": [{"client": 1, "round": 7}]}, "after the last round"),
    ({"stragglers": [{"client": 0, "link_factor": 2}]}, "link_factor"),
])
def test_fault_config_errors_name_the_key(faults, match) -> None:
    with pytest.raises(ConfigError, match=match):
        config_from_dict({"clients": {"total": 4, "per_round": 4}, "faults": faults})


def test_app_dir_checks(tmp_path: Path) -> None:
    check_app_dir(FIXTURE_APP)
    with pytest.raises(ConfigError, match="no pyproject.toml"):
        check_app_dir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    with pytest.raises(ConfigError, match=r"no \[tool.flwr.app\]"):
        check_app_dir(tmp_path)


def test_fedbw_app_dir_points_flower_at_fedbws_apps(tmp_path: Path) -> None:
    import tomllib

    from fedbw.fl.settings import PLAN_KEY

    app = write_fedbw_app(tmp_path, tmp_path / "plan.json")
    check_app_dir(app)
    data = tomllib.loads((app / "pyproject.toml").read_text())
    assert data["tool"]["flwr"]["app"]["components"] == {"serverapp": "fedbw.fl.server_app:app",
                                                         "clientapp": "fedbw.fl.client_app:app"}
    assert data["tool"]["flwr"]["app"]["config"][PLAN_KEY] == str(tmp_path / "plan.json")
    assert data["project"]["dependencies"] == []  # nothing for the SuperLink to `uv sync`


def test_profile_clients() -> None:
    cs = clients_for_profile(3, "home-30")
    assert [c.client_id for c in cs] == [0, 1, 2]
    assert cs[0].link.up_mbps < 30 and cs[0].link.latency_up_ms == pytest.approx(12.5)
    with pytest.raises(ConfigError):
        clients_for_profile(0, "home-30")


# ------------------------------------------------------------------------------------ attribution


def _measure(cid: int, group: str, t0: float, down_s: float = 0.5, up_s: float = 1.0) -> MessageMeasure:
    """A message that arrives at t0+1 (after a 1 s poll), runs its ClientApp, then uploads."""
    span = MessageSpan(0, "train", group, t0 + 1.1, t0 + 1.0 + down_s, t0 + 3.0, t0 + 6.0, t0 + 6.0 + up_s)
    down = Transfer(1_000_000, t0 + 1.0, t0 + 1.0 + down_s, 990_000, t0 + 1.05, t0 + 1.0 + down_s)
    up = Transfer(4_000_000, t0 + 6.0, t0 + 6.0 + up_s, 3_990_000, t0 + 6.05, t0 + 6.0 + up_s)
    return MessageMeasure(cid, span, down, up)


def test_message_times_split_into_consecutive_parts() -> None:
    t0 = 100.0
    m = _measure(0, "1", t0)
    ev = {"client_id": 0, "stage": "fit", "t_sent": t0, "t_replied": t0 + 9.0, "t_recv": t0 + 3.5,
          "t_reply": t0 + 5.5, "t_app_s": 2.0, "compute_s": 1.5, "bytes_down": 990_000, "bytes_up": 3_990_000}
    t = message_times(ev, m)
    assert t.t_down_s == pytest.approx(0.5) and t.t_up_s == pytest.approx(1.0) and t.t_compute_s == 1.5
    assert t.parts["supernode_poll_s"] == pytest.approx(1.0)
    assert t.parts["clientapp_start_s"] == pytest.approx(2.0)  # received at +1.5, app running at +3.5
    assert t.parts["app_other_s"] == pytest.approx(0.5)
    assert t.parts["reply_pickup_s"] == pytest.approx(0.5)  # app done +5.5, upload from +6.0
    assert t.parts["serverapp_poll_s"] == pytest.approx(2.0)  # last byte +7.0, pulled +9.0
    # the parts and the measured link/compute times add up to the message's whole time
    assert sum(t.parts.values()) + t.t_down_s + t.t_up_s + t.t_compute_s == pytest.approx(t.total_s)
    assert t.t_framework_s == pytest.approx(sum(t.parts.values()))
    assert t.down_before_pushed_s is None  # the event did not log the push's end
    assert t.t_serverapp_push_s is t.t_serverapp_pull_s is t.serverapp_pulled_with is None  # nor the pull's start


def test_the_serverapps_own_push_and_pull_come_from_its_stamps() -> None:
    """Pushed from +0 to +0.8 with two other messages; the pull that brought the reply ran +8.2 → +9.0 with one."""
    t0 = 100.0
    ev = {"client_id": 0, "stage": "fit", "t_sent": t0, "t_pushed": t0 + 0.8, "t_pull": t0 + 8.2,
          "t_replied": t0 + 9.0, "pushed_with": 3, "pulled_with": 2}
    t = message_times(ev, _measure(0, "1", t0))
    assert t.t_serverapp_push_s == pytest.approx(0.8) and t.serverapp_pushed_with == 3
    assert t.t_serverapp_pull_s == pytest.approx(0.8) and t.serverapp_pulled_with == 2
    from fedbw.engines.emulate.run import measured_message

    m = measured_message(1, t)  # the typed record calibration reads carries them
    assert (m.t_serverapp_push_s, m.serverapp_pushed_with, m.t_serverapp_pull_s, m.serverapp_pulled_with) == (
        t.t_serverapp_push_s, 3, t.t_serverapp_pull_s, 2)


def test_a_download_that_started_inside_the_push_says_by_how_much() -> None:
    """The download's first byte came at +1.0; a push that returned at +1.3 was still under way for 0.3 s
    of it, one that returned at +0.4 not at all."""
    t0 = 100.0
    ev = {"client_id": 0, "stage": "fit", "t_sent": t0, "t_replied": t0 + 9.0, "t_recv": t0 + 3.5,
          "t_reply": t0 + 5.5, "t_app_s": 2.0, "compute_s": 1.5}
    assert message_times({**ev, "t_pushed": t0 + 1.3}, _measure(0, "1", t0)).down_before_pushed_s == pytest.approx(0.3)
    assert message_times({**ev, "t_pushed": t0 + 0.4}, _measure(0, "1", t0)).down_before_pushed_s == 0.0


def test_round_records_pair_events_with_spans_and_mark_drops() -> None:
    t0 = 50.0
    measures = [_measure(0, "1", t0), _measure(1, "1", t0, up_s=2.0), _measure(0, "2", t0 + 20)]
    events = [{"client_id": c, "stage": "fit", "t_sent": t0, "t_replied": t0 + 10.0, "compute_s": 1.0}
              for c in (0, 1)]
    pairs = match_messages(events, measures)
    assert [(e["client_id"], m.span.group) for e, m in pairs] == [(0, "1"), (1, "1")]
    times = [message_times(e, m) for e, m in pairs]
    clients, rnd = round_records("r", "emulate", 1, times, {0: "home-30", 1: "home-30", 2: "home-30"},
                                 sampled=[0, 1, 2], dropped=[2])
    assert [c.dropped for c in clients] == [False, False, True]
    assert rnd.round_time_s == pytest.approx(10.0)
    # the barrier-holder is client 1 (its upload ended last): 0.5 s down + 2 s up
    assert rnd.comm_time_s == pytest.approx(2.5) and rnd.compute_time_s == pytest.approx(1.0)
    assert rnd.framework_time_s == pytest.approx(10.0 - 2.5 - 1.0)
    assert set(rnd.extra["framework_parts_s"]) == set(FRAMEWORK_PARTS)
    assert rnd.bytes_up_total == 8_000_000


def test_messages_pair_with_spans_by_time_without_group_ids() -> None:
    """Message-API apps send no group id: a client's k-th event takes the last span it received after the
    server had its (k-1)-th reply; a warm-up before the first window is passed over."""
    warm = MessageMeasure(0, MessageSpan(0, "query", "", 0.0, 0.1, None, 0.2, 0.3), Transfer(10, None, None),
                          Transfer(10, None, None))
    train, evaluate = _measure(0, "", 10.0), _measure(0, "", 30.0)
    events = [{"client_id": 0, "stage": "train", "t_sent": 10.0, "t_replied": 20.0},
              {"client_id": 0, "stage": "evaluate", "t_sent": 30.0, "t_replied": 40.0}]
    pairs = match_messages(events, [evaluate, warm, train])
    assert [m for _, m in pairs] == [train, evaluate]
    assert match_messages([{"client_id": 3, "t_sent": 1.0, "t_replied": 2.0}], [train]) == [
        ({"client_id": 3, "t_sent": 1.0, "t_replied": 2.0}, None)]


def test_the_wrapped_copy_points_flower_at_fedbws_wrappers_and_leaves_the_app_alone(tmp_path: Path) -> None:
    from fedbw.engines.foreign_app import WRAPPER_MODULE, read_app, wrapped_copy

    before = (FIXTURE_APP / "pyproject.toml").read_text()
    dst = wrapped_copy(FIXTURE_APP, tmp_path)
    comps = read_app(dst)["components"]
    assert comps == {"serverapp": f"{WRAPPER_MODULE}:server_app", "clientapp": f"{WRAPPER_MODULE}:client_app"}
    wrapper = (dst / f"{WRAPPER_MODULE}.py").read_text()
    assert "numpy_app.server_app:app" in wrapper and "numpy_app.client_app:app" in wrapper
    assert (dst / "numpy_app" / "client_app.py").exists() and read_app(dst)["config"] == read_app(FIXTURE_APP)["config"]
    assert (FIXTURE_APP / "pyproject.toml").read_text() == before


def test_server_log_issues_find_halted_secagg_and_failures() -> None:
    from fedbw.engines.emulate.server_log import server_log_issues

    log = """INFO :      [ROUND 1]
INFO :      Secure aggregation commencing.
INFO :      aggregate_fit: received 2 results and 1 failures
INFO :      [ROUND 2]
ERROR :     Insufficient available nodes.
INFO :      Secure aggregation halted.
"""
    issues = server_log_issues(log)
    assert issues == ["round 1: 1 client(s) failed, 2 result(s) aggregated", "round 2: Insufficient available nodes.",
                      "round 2: SecAgg+ halted (too few clients survived to unmask the sum)"]
    assert server_log_issues("INFO :      aggregate_fit: received 3 results and 0 failures") == []


def test_cli_rejects_a_directory_that_is_not_a_flower_app(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from fedbw.cli import app

    res = CliRunner().invoke(app, ["emulate", "--app", str(tmp_path), "--clients", "2"])
    assert res.exit_code == 2
    assert "no pyproject.toml" in res.output


def test_cli_rejects_an_unknown_profile() -> None:
    from typer.testing import CliRunner

    from fedbw.cli import app

    res = CliRunner().invoke(app, ["emulate", "--app", str(FIXTURE_APP), "--profile", "home-9000"])
    assert res.exit_code == 2
    assert "home-9000" in res.output


@pytest.mark.parametrize("value, message", [("fast", 'must be a number (e.g. 4) or "auto"'),
                                            ("0.5", "emulate.dilation must be a number from 1 to 60")])
def test_cli_rejects_a_bad_dilation(value: str, message: str) -> None:
    from typer.testing import CliRunner

    from fedbw.cli import app

    res = CliRunner().invoke(app, ["emulate", "--app", str(FIXTURE_APP), "--dilation", value])
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output


def test_capped_devices_get_one_compute_thread_and_others_the_hosts_default() -> None:
    """Under CPU caps each device is one core of the host: OpenMP, MKL and fedbw's torch get one thread
    (a thread per host core would spin inside a cap of 1/K of a core); undilated or uncapped runs keep the
    host's defaults. The caller's variables and the dilation launcher's always pass."""
    from fedbw.engines.emulate.federation import CAPPED_THREADS, process_env
    from fedbw.fl.settings import THREADS_ENV
    from fedbw.timewarp import Dilation

    warp = Dilation.starting_now(2.0)
    capped = process_env({"X": "1"}, warp, capped=True)
    assert capped["X"] == "1" and "PYTHONPATH" in capped
    assert {k: capped[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", THREADS_ENV)} == dict.fromkeys(
        ("OMP_NUM_THREADS", "MKL_NUM_THREADS", THREADS_ENV), "1") == CAPPED_THREADS
    uncapped = process_env({"X": "1"}, warp, capped=False)
    assert not set(CAPPED_THREADS) & set(uncapped) and uncapped["X"] == "1"
    assert process_env(None, Dilation.starting_now(1.0), capped=False) == {}
