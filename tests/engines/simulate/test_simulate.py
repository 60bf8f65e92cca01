"""simulate: the virtual clock over measured events, and real Flower runs end to end (slow)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fedbw.config import config_from_dict
from fedbw.engines.estimate import estimate_round
from fedbw.engines.measured import EventReader, RoundAssembler
from fedbw.results.measured_round import RoundEvents, mark_halted
from fedbw.engines.simulate.clock import records_from_round_events
from fedbw.netmodel.payload import round_exchanges
from fedbw.plan import build_plan
from fedbw.results.records import load_records

MB = 1e6


def _msg(r, cid, stage, down, up, compute=None, **kw):
    return {"event": "message", "round": r, "client_id": cid, "stage": stage, "bytes_down": down, "bytes_up": up,
            "compute_s": compute, **kw}


def _link_time(nbytes, mbps, rtt_ms, eff):
    return rtt_ms / 2000 + nbytes * 8 / (mbps * eff * 1e6)


# ------------------------------------------------------------------------------------ virtual clock


def test_virtual_clock_per_client_and_barrier():
    plan = build_plan(config_from_dict({"clients": {"total": 2, "per_round": 2},
                                        "network": {"overrides": [{"client": 1, "profile": "home-80"}]}}))
    rnd = RoundEvents(1, clients=[0, 1], messages=[
        _msg(1, 0, "fit", 1 * MB, 2 * MB, 0.5, train_loss=1.0, num_examples=10),
        _msg(1, 1, "fit", 1 * MB, 2 * MB, 0.3, train_loss=2.0, num_examples=20)], loss=0.7, accuracy=0.8,
        wall_time_s=3.0, finished=True)
    clients, record = records_from_round_events(plan, "run", "simulate", rnd)
    eff = plan.clients[0].access.tcp_efficiency
    c0, c1 = sorted(clients, key=lambda c: c.client_id)
    assert c0.profile == "home-30" and c1.profile == "home-80"
    assert c0.t_down_s == pytest.approx(_link_time(1 * MB, 300, 25, eff))
    assert c0.t_up_s == pytest.approx(_link_time(2 * MB, 30, 25, eff))
    assert c1.t_up_s == pytest.approx(_link_time(2 * MB, 80, 15, eff))
    assert (c0.t_compute_s, c1.t_compute_s) == (0.5, 0.3)
    assert (c0.train_loss, c1.num_examples) == (1.0, 20)
    # The round waits for its slowest client: home-30 (2 MB up in ≈ 0.56 s), though it computes longer.
    assert record.round_time_s == pytest.approx(max(c0.t_total_s, c1.t_total_s))
    assert record.round_time_s == pytest.approx(c0.t_total_s)
    assert record.bytes_up_total == 4 * MB and record.bytes_down_total == 2 * MB
    assert (record.loss, record.accuracy, record.wall_time_s) == (0.7, 0.8, 3.0)


def test_virtual_clock_sums_stage_barriers():
    """SecAgg+: four exchanges; each stage ends at its slowest client, the round is their sum."""
    plan = build_plan(config_from_dict({"clients": {"total": 2, "per_round": 2}}))
    stages = [("setup", 1e3, 1e3, None), ("share_keys", 2e3, 1e3, None),
              ("collect_masked_vectors", 1e5, 2e5, 0.2), ("unmask", 1e3, 1e3, None)]
    msgs = []
    for cid, slow in ((0, 1.0), (1, 3.0)):
        msgs += [_msg(1, cid, s, d, u * slow, c) for s, d, u, c in stages]
    clients, record = records_from_round_events(plan, "run", "simulate", RoundEvents(1, [0, 1], msgs))
    assert list(record.stage_times_s) == [s for s, *_ in stages]
    per_stage = {s: max(st.t_total_s for c in clients for st in c.stages if st.stage == s) for s, *_ in stages}
    assert record.round_time_s == pytest.approx(sum(per_stage.values()))
    assert all(st.t_compute_s == (0.2 if st.stage == "collect_masked_vectors" else 0.0)
               for c in clients for st in c.stages)


def test_same_events_give_the_estimate_when_bytes_and_compute_match():
    plan = build_plan(config_from_dict({}))
    r = 1
    ex = plan.predicted_exchanges(r)[0]
    msgs = [_msg(r, c, "fit", ex.bytes_down, ex.bytes_up, plan.clients[c].est_compute_s)
            for c in plan.sampled_clients(r)]
    _, record = records_from_round_events(plan, "x", "simulate", RoundEvents(r, plan.sampled_clients(r), msgs))
    assert record.round_time_s == pytest.approx(estimate_round(plan, r).round_time_s)


def test_event_reader_keeps_a_torn_line_for_later(tmp_path):
    path = tmp_path / "events.jsonl"
    reader = EventReader(path)
    assert reader.read_new() == []
    path.write_text('{"event": "start"}\n{"event": "ro')
    assert [e["event"] for e in reader.read_new()] == ["start"]
    with path.open("a") as fh:
        fh.write('und_end", "round": 1}\n')
    assert reader.read_new() == [{"event": "round_end", "round": 1}]


def test_assembler_refuses_events_of_another_schema():
    from fedbw.files.versioned import EVENTS

    ok = RoundAssembler()
    ok.add({"event": "start", **EVENTS.stamp()})
    assert ok.error is None
    old = RoundAssembler()
    old.add({"event": "start", "schema_version": 1})  # fedbw 0.2's start event: no schema name
    assert "different fedbw versions" in old.error


def test_assembler_finishes_rounds_on_round_end():
    asm = RoundAssembler()
    assert asm.add({"event": "round_start", "round": 1, "clients": [3, 1]}) is None
    assert asm.add(_msg(1, 3, "fit", 1, 2, 0.1)) is None
    assert asm.get(1).clients_done() == 1
    rnd = asm.add({"event": "round_end", "round": 1, "loss": 0.5, "accuracy": 0.9, "wall_time_s": 1.0})
    assert rnd is not None and rnd.finished and rnd.clients == [3, 1] and len(rnd.messages) == 1
    asm.add({"event": "error", "message": "boom"})
    assert asm.error == "boom"


def test_a_round_secagg_halted_is_recorded_as_abandoned_with_its_reason():
    """The ServerApp logs a halted SecAgg+ round (it aggregated nothing) and the run goes on, as Flower's does;
    the round's record says abandoned, and why."""
    from fedbw.report.round_policy import abandoned_note

    asm = RoundAssembler()
    asm.add({"event": "round_start", "round": 1, "clients": [0, 1]})
    asm.add(_msg(1, 0, "fit", 1 * MB, 2 * MB, 0.5))
    asm.add({"event": "halted", "round": 1, "reason": "SecAgg+ halted: a client kept fewer"})
    rnd = asm.add({"event": "round_end", "round": 1, "loss": 0.5, "accuracy": 0.9, "wall_time_s": 1.0})
    assert rnd is not None and rnd.halted == "SecAgg+ halted: a client kept fewer"
    plan = build_plan(config_from_dict({"clients": {"total": 2, "per_round": 2}}))
    _, record = records_from_round_events(plan, "run", "simulate", rnd)
    mark_halted(record, rnd)
    assert record.abandoned and record.extra["secagg_halted"] == rnd.halted
    kept_events = RoundEvents(1, clients=[0, 1], messages=rnd.messages, finished=True)
    _, kept = records_from_round_events(plan, "run", "simulate", kept_events)
    mark_halted(kept, kept_events)
    assert not kept.abandoned and "secagg_halted" not in kept.extra
    assert abandoned_note([record, kept]) == "; 1 round(s) abandoned (SecAgg+ halted: the server kept its model)"
    kept.abandoned = True
    assert "1 SecAgg+ halted, the rest fewer than round.min_replies" in abandoned_note([record, kept])
    assert abandoned_note([]) == ""


# ------------------------------------------------------------------------------------- end to end

BASE = {"name": "e2e", "engine": "simulate", "device": "cpu", "seed": 1,
        "model": {"name": "small-cnn"}, "clients": {"total": 4, "per_round": 2},
        "training": {"rounds": 2, "local_epochs": 1},
        "network": {"mix": [{"profile": "home-30", "share": 1}, {"profile": "home-80", "share": 1}]}}


def _run(tmp_path: Path, progress=None, **over):
    from fedbw.runner import run_experiment

    data = json.loads(json.dumps(BASE))
    for section, values in over.items():
        if isinstance(values, dict):
            data.setdefault(section, {}).update(values)
        else:
            data[section] = values
    data["output_dir"] = str(tmp_path)
    cfg = config_from_dict(data)
    return cfg, (run_experiment(cfg, progress) if progress else run_experiment(cfg))


def _child_pid(run_dir: Path) -> int:
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev["event"] == "start":
            return int(ev["pid"])
    raise AssertionError("no start event")


def _assert_group_gone(pgid: int) -> None:
    """The simulation child led its own process group (Flower, Ray): none of it may survive."""
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    seen = []
    first = _run(tmp_path_factory.mktemp("a"), progress=lambda r, d, t: seen.append((r, d, t)))
    second = _run(tmp_path_factory.mktemp("b"))
    return first, second, seen


@pytest.mark.slow
def test_end_to_end_two_rounds(two_runs):
    (cfg, result), _, seen = two_runs
    run_dir = result.run_dir
    clients, rounds = load_records(run_dir)
    assert [r.round for r in rounds] == [1, 2]
    assert len(clients) == 2 * cfg.clients.per_round
    plan = build_plan(cfg)
    for r in rounds:
        assert r.engine == "simulate" and r.num_clients == 2
        assert r.loss is not None and 0 <= r.accuracy <= 1 and r.wall_time_s > 0
        assert sorted(c.client_id for c in clients if c.round == r.round) == plan.sampled_clients(r.round)
    for c in clients:
        assert [s.stage for s in c.stages] == ["fit"]
        assert c.t_down_s > 0 and c.t_up_s > 0 and c.t_compute_s > 0 and c.train_loss is not None
        assert c.profile == plan.clients[c.client_id].profile
    env = json.loads((run_dir / "environment.json").read_text())
    assert env["device"] == "cpu" and env["packages"]["flwr"] == "1.42.0"
    assert (run_dir / "resolved_config.json").exists()
    assert (2, 2, 2) in seen and any(d < t for _, d, t in seen)  # progress per client, then per round
    _assert_group_gone(_child_pid(run_dir))


@pytest.mark.slow
def test_measured_uplink_is_float32_plus_framing(two_runs):
    """Within 1 % of the model's float32 bytes plus Flower's framing (payload.py's calibrated figure)."""
    (cfg, result), _, _ = two_runs
    clients, _ = load_records(result.run_dir)
    plan = build_plan(cfg)
    predicted = round_exchanges(plan.model.params, plan.num_arrays, 1)[0]
    for c in clients:
        assert c.bytes_up == pytest.approx(predicted.bytes_up, rel=0.01)
        assert c.bytes_down == pytest.approx(predicted.bytes_down, rel=0.01)
        assert c.bytes_up > plan.model.float32_bytes


#: Flower draws random 64-bit node ids per run; they travel as varints in every message's metadata,
#: so sizes may differ by a few bytes between otherwise identical runs.
NODE_ID_JITTER_BYTES = 16


@pytest.mark.slow
def test_same_seed_same_records(two_runs):
    """Everything but times measured on this machine (wall times, measured compute) repeats."""
    (_, a), (_, b), _ = two_runs
    ca, ra = load_records(a.run_dir)
    cb, rb = load_records(b.run_dir)
    assert len(ca) == len(cb) and len(ra) == len(rb)
    for x, y in zip(ra, rb):
        assert (x.round, x.num_clients, x.loss, x.accuracy) == (y.round, y.num_clients, y.loss, y.accuracy)
        assert x.bytes_up_total == pytest.approx(y.bytes_up_total, abs=NODE_ID_JITTER_BYTES * x.num_clients)
    for x, y in zip(ca, cb):
        assert (x.round, x.client_id, x.profile, x.train_loss, x.num_examples) == \
               (y.round, y.client_id, y.profile, y.train_loss, y.num_examples)
        for s, t in zip(x.stages, y.stages):
            assert s.stage == t.stage
            assert s.bytes_down == pytest.approx(t.bytes_down, abs=NODE_ID_JITTER_BYTES)
            assert s.bytes_up == pytest.approx(t.bytes_up, abs=NODE_ID_JITTER_BYTES)
            assert s.t_up_s == pytest.approx(t.t_up_s, abs=1e-5)


@pytest.mark.slow
def test_synthetic_compute_interrupted_keeps_finished_rounds(tmp_path):
    """Synthetic mode: profile compute time, model-sized bytes; Ctrl-C after round 1 keeps round 1."""

    def interrupt(r, done, total):
        if r == 2 and done >= 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, progress=interrupt, clients={"compute": "synthetic"}, training={"rounds": 3})
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    clients, rounds = load_records(run_dir)
    assert [r.round for r in rounds] == [1]
    plan = build_plan(config_from_dict({**BASE, "clients": {"total": 4, "per_round": 2, "compute": "synthetic"}}))
    predicted = round_exchanges(plan.model.params, plan.num_arrays, 1)[0]
    for c in clients:
        assert c.t_compute_s == pytest.approx(plan.clients[c.client_id].est_compute_s)
        assert c.bytes_up == pytest.approx(predicted.bytes_up, rel=0.01)
    assert rounds[0].loss is None  # untrained updates: nothing to evaluate
    _assert_group_gone(_child_pid(run_dir))


@pytest.mark.slow
def test_stock_secaggplus_round(tmp_path):
    """Flower's SecAgg+ through the same apps: four measured stages, int64 masked uploads."""
    cfg, result = _run(tmp_path, clients={"total": 3, "per_round": 3, "compute": "synthetic"},
                       training={"rounds": 1},
                       privacy={"secagg": {"enabled": True, "num_shares": 3, "reconstruction_threshold": 2}})
    clients, rounds = load_records(result.run_dir)
    stages = ["setup", "share_keys", "collect_masked_vectors", "unmask"]
    assert set(rounds[0].stage_times_s) == set(stages)
    plan = build_plan(cfg)
    for c in clients:
        assert [s.stage for s in c.stages] == stages
        masked = next(s for s in c.stages if s.stage == "collect_masked_vectors")
        assert masked.bytes_up == pytest.approx(2 * plan.model.float32_bytes, rel=0.02)
        assert masked.t_compute_s > 0 and sum(s.t_compute_s for s in c.stages) == masked.t_compute_s
    _assert_group_gone(_child_pid(result.run_dir))


# ------------------------------------------------------------------------ process supervision (fast)


def _fake_child(monkeypatch, code: str) -> None:
    import sys

    from fedbw.engines import simulate

    monkeypatch.setattr(simulate, "child_command", lambda plan_path: [sys.executable, "-c", code])


def test_a_failed_child_is_a_run_error_with_its_log(tmp_path, monkeypatch):
    from fedbw.engines.simulate import run_simulate
    from fedbw.errors import RunError
    from fedbw.results.records import RecordWriter

    _fake_child(monkeypatch, "import sys; print('ray could not start'); sys.exit(3)")
    plan = build_plan(config_from_dict({"device": "cpu"}))
    with RecordWriter(tmp_path / "records.jsonl") as w, pytest.raises(RunError) as err:
        run_simulate(plan, "r", w)
    assert "exited with code 3" in str(err.value) and "ray could not start" in str(err.value)
    assert json.loads((tmp_path / "plan.json").read_text())["plan"]["config"]["seed"] == 0


def test_ctrl_c_stops_the_child_and_its_group(tmp_path, monkeypatch):

    from fedbw.engines.simulate import run_simulate
    from fedbw.results.records import RecordWriter

    # A child that starts a grandchild in its group and then hangs, as Ray's processes would.
    pid_file = tmp_path / "pids"
    _fake_child(monkeypatch, (
        "import subprocess, sys, time, os; "
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); "
        f"open({str(pid_file)!r}, 'w').write(f'{{os.getpid()}} {{p.pid}}'); time.sleep(300)"))

    def interrupt(r, done, total):
        import time

        for _ in range(100):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.05)
        raise KeyboardInterrupt

    plan = build_plan(config_from_dict({"device": "cpu"}))
    with RecordWriter(tmp_path / "records.jsonl") as w, pytest.raises(KeyboardInterrupt):
        run_simulate(plan, "r", w, interrupt)
    child, grandchild = map(int, pid_file.read_text().split())
    _assert_group_gone(child)
    with pytest.raises(ProcessLookupError):
        os.kill(grandchild, 0)
