"""benchmarks/validate.py's bookkeeping, without running a grid: the design holds out the calibration's
configs, the run log resumes and refuses a moved model, and a row's verdict is computed as documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchmark_module import load_benchmark

from fedbw.calibrate.fit import SHAPED_MODEL
from fedbw.report.validation_table import validation_markdown

V = load_benchmark("validate")


@pytest.fixture(autouse=True)
def _per_row_dilation(monkeypatch) -> None:
    """The bookkeeping tests freeze without a calibration file; the one-dilation rule has its own test."""
    monkeypatch.setattr(V, "ONE_DILATION", None)


def test_a_new_freeze_runs_every_row_at_the_dilation_its_calibration_was_measured_at(tmp_path: Path,
                                                                                       monkeypatch) -> None:
    """Emulate's rounds depend on the dilation (docs/fidelity.md): a freeze with ONE_DILATION refuses a
    calibration measured at another, and runs every row's trials at it, whatever the row's size."""
    monkeypatch.setattr(V, "LOG", tmp_path / "runs.jsonl")
    monkeypatch.setattr(V, "ONE_DILATION", 7.0)
    state = {"model_version": "m-a", "calibration": "c-a", "calibration_file": "x", "calibration_created_utc": "t",
             "commit": "0" * 40, "dirty": False, "calibration_dilation": 2.0}
    monkeypatch.setattr(V, "frozen_now", lambda calibration=None: dict(state))
    with pytest.raises(SystemExit, match="measured at dilation 2.0, and this freeze runs every row at 7; .*"
                                         "fedbw calibrate --dilation 7"):
        V.current_freeze([], new=False)
    assert V.read_log() == []  # nothing frozen
    state["calibration_dilation"] = 7.0
    freeze = V.current_freeze([], new=False)
    assert freeze["dilation"] == 7.0 and "calibration_dilation" not in freeze
    assert [V.dilation(n, freeze["max_dilation"], freeze["dilation"]) for n in (2, 8)] == [7.0, 7.0]
    assert V.dilation(2, None, None) < 7.0  # without it, each row at auto's


def test_a_freeze_of_another_calibration_file_runs_the_model_with_it_and_resumes_only_with_it(tmp_path: Path,
                                                                                            monkeypatch) -> None:
    """A validation may freeze a calibration other than the shipped one (measured at the freeze's dilation):
    the freeze names its file and fingerprint, the model runs read it, and a resume with another file is
    refused."""
    from fedbw.calibration.file import Calibration, Constant, read_calibration, write_calibration

    monkeypatch.setattr(V, "ROOT", tmp_path)  # the repository the freeze names files in
    monkeypatch.setattr(V, "LOG", tmp_path / "runs.jsonl")
    for name, value in (("a.toml", 0.01), ("b.toml", 0.02)):
        write_calibration(tmp_path / name, Calibration({"request_s": Constant(value)}, {"created_utc": "now"}))
    freeze = V.current_freeze([], new=False, calibration="a.toml")
    assert freeze["calibration_path"] == freeze["calibration_file"] == "a.toml"
    assert freeze["calibration"] == read_calibration(tmp_path / "a.toml").fingerprint
    assert V.current_freeze(V.read_log(), new=False)["id"] == 1  # resumes with the frozen file
    with pytest.raises(SystemExit, match="froze the calibration a.toml"):
        V.current_freeze(V.read_log(), new=False, calibration="b.toml")
    write_calibration(tmp_path / "a.toml", Calibration({"request_s": Constant(0.03)}, {"created_utc": "now"}))
    with pytest.raises(SystemExit, match="calibration changed"):  # the file moved under the freeze
        V.current_freeze(V.read_log(), new=False)
    ran: list[dict] = []

    def engine(cfg: dict, name: str) -> None:
        ran.append(cfg)
        raise V.FedbwError("stop")

    monkeypatch.setattr(V, "run_engine", engine)
    V.model_runs(freeze, "r", {"name": "x"})
    assert ran[0]["deployment"] == {"calibration": str(tmp_path / "a.toml")}
    V.model_runs({**freeze, "calibration_path": None}, "r", {"name": "x"})
    assert "deployment" not in ran[1]  # the shipped calibration: the config's default


def test_the_host_reference_shown_is_the_frozen_calibration_files(tmp_path: Path, monkeypatch) -> None:
    """A freeze of a calibration file shows that file's host reference, not the shipped one's, and none once
    the file no longer has the frozen fingerprint."""
    from fedbw.calibration.file import HOST_REFERENCE, Calibration, Constant, read_calibration, write_calibration

    monkeypatch.setattr(V, "ROOT", tmp_path)
    write_calibration(tmp_path / "k7.toml", Calibration({"request_s": Constant(0.01)},
                                                       {"created_utc": "now", HOST_REFERENCE: 1.25}))
    fingerprint = read_calibration(tmp_path / "k7.toml").fingerprint
    assert V._calibration_reference(fingerprint, "k7.toml") == 1.25
    assert V._calibration_reference("c-other", "k7.toml") is None
    assert V._calibration_reference(fingerprint, "gone.toml") is None


def test_the_grid_is_held_out_from_the_calibration_and_from_every_earlier_validation() -> None:
    rows = [V.row_id(*g) for g in V.GRID]
    assert len(set(rows)) == len(rows) >= 12 and {g[2] for g in V.GRID} >= {2, 4, 8}
    # earlier validations' configs informed the model since
    assert not set(rows) & {V.row_id(*g) for g in V.GRID_1 + V.GRID_2 + V.GRID_3 + V.GRID_4}
    assert all(g[2] >= 2 for g in V.GRID)  # calibration ran one client
    assert not any(g[0] == SHAPED_MODEL and g[2] == 1 for g in V.GRID)
    assert {g[3] for g in V.GRID} == {True, False} and all(g[2] >= 3 for g in V.GRID if g[3])  # SecAgg+ needs 3
    assert len({g[0] for g in V.GRID}) >= 3 and any(g[1].startswith("mobile") for g in V.GRID)
    assert all(V.ROWS[r] == g for r, g in zip(rows, V.GRID)) and all(g[0] in V.MODELS for g in V.GRID)


def test_the_grid_stops_between_trials_after_the_time_given_and_resumes_from_the_log(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    monkeypatch.setattr(V, "LOG", tmp_path / "runs.jsonl")
    ran: list[tuple[str, int]] = []

    def trial(freeze: dict, rid: str, n: int, cfg: dict) -> None:
        ran.append((rid, n))
        V.append({"kind": "trial", "freeze": freeze["id"], "row": rid, "trial": n, "status": "ok"})

    monkeypatch.setattr(V, "emulate_trial", trial)
    monkeypatch.setattr(V, "model_runs", lambda f, rid, cfg: V.append(
        {"kind": "model", "freeze": f["id"], "row": rid, "status": "ok"}))
    freeze = {"id": 1, "grid": [V.row_id(*g) for g in V.GRID[:2]]}
    assert V.run_grid(freeze, None, stop_after_s=-1.0) is False and ran == []  # no trial starts after the time
    monkeypatch.setattr(V, "STOP_FILE", tmp_path / "STOP")
    (tmp_path / "STOP").touch()  # asked to stop between trials: it stops, and the next run goes on
    assert V.run_grid(freeze, None) is False and ran == [] and not (tmp_path / "STOP").exists()
    assert V.run_grid(freeze, None) is True and len(ran) == 2 * V.TRIALS
    assert V.run_grid(freeze, None) is True and len(ran) == 2 * V.TRIALS  # resumed: nothing left to run


def test_a_new_validation_refuses_a_row_an_earlier_one_ran(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(V, "LOG", tmp_path / "runs.jsonl")
    monkeypatch.setattr(V, "frozen_now", lambda calibration=None: {"model_version": "m-a", "calibration": "c-a", "calibration_file": "x",
                                                  "calibration_created_utc": "t", "commit": "0" * 40, "dirty": False})
    V.current_freeze([], new=False)
    with pytest.raises(SystemExit, match="not held out"):
        V.current_freeze(V.read_log(), new=True)


def _rounds(times: list[float], interval: tuple[float, float] | None = None) -> list[dict]:
    return [{"round": i + 1, "round_time_s": t, "comm_time_s": 0.0, "framework_time_s": 0.0,
             "interval_s": list(interval) if interval else None, "median_s": t, "host_bound": False if interval is None
             else None, "host_share": None} for i, t in enumerate(times)]


def _transfers(down: float, up: float) -> list[dict]:
    return [{"round": r, "client": 0, "stage": "fit", "down_s": down, "up_s": up} for r in (1, 2, 3)]


def test_a_row_pools_both_trials_steady_rounds_against_the_models_same_round() -> None:
    trials = [{"dilation": 3.0, "rounds": _rounds([14.0, 10.2, 10.4]), "transfers": _transfers(2.0, 5.15)},
              {"dilation": 3.0, "rounds": _rounds([13.0, 9.6, 11.8]), "transfers": _transfers(2.02, 5.0)}]
    model = {"simulate": {"rounds": _rounds([12.0, 10.0, 10.0], (9.5, 11.0)), "transfers": _transfers(2.0, 5.0)},
             "estimate": {"rounds": _rounds([11.0, 9.0, 9.0], (8.5, 10.0))}}
    row = V.row_result("r", trials, model)
    assert row["emulate_steady_rounds_s"] == [10.2, 10.4, 9.6, 11.8]  # round 1 (start-up) left out
    assert row["round_median_abs_error"] == pytest.approx(0.04)  # |errors| .02 .04 .04 .18
    assert row["round_median_error"] == pytest.approx(0.03)  # signed: -.04 .02 .04 .18
    assert row["pooled_inside_interval"] is True and row["single_rounds_inside_interval"] == 0.75
    assert row["transfer_median_abs_error"] == pytest.approx(0.005)  # 0 ×6, .01 ×3, .03 ×3
    assert row["simulate_interval_s"] == [9.5, 11.0]


def test_transfers_are_chosen_by_the_models_time_not_by_the_measured_one() -> None:
    # the model times the download at 0.5 s and the upload at 2 s; one trial's download met Flower's pull
    # backoff and took 1.5 s: chosen by its measured time it would enter the long set only because it went long
    trials = [{"transfers": [{"round": 2, "client": 0, "stage": "fit", "down_s": 1.5, "up_s": 2.02}]},
              {"transfers": [{"round": 2, "client": 0, "stage": "fit", "down_s": 0.5, "up_s": 1.96}]}]
    modelled = [{"round": 2, "client": 0, "stage": "fit", "down_s": 0.5, "up_s": 2.0}]
    chosen, either, stretched = V.transfer_errors(trials, modelled)
    assert sorted(chosen) == pytest.approx([0.01, 0.02])  # the two uploads, whatever the downloads did
    assert sorted(either) == pytest.approx([0.01, 0.02, 2.0])  # the frozen rule lets the stalled one in
    assert [(t["dir"], t["emulate_s"], t["known"]) for t in stretched] == [("down", 1.5, False)]


def test_a_row_says_what_stretched_the_transfers_only_the_frozen_rule_counts(tmp_path: Path) -> None:
    from fedbw.engines.emulate.run import SUMMARY_FILE
    from fedbw.files.atomic import write_json_atomic
    from fedbw.files.versioned import EMULATE
    from fedbw.results.messages import MeasuredMessage

    msg = MeasuredMessage(round=2, client_id=0, stage="fit", bytes_down=5e5, bytes_up=5e5, flower_bytes_down=5e5,
                          flower_bytes_up=5e5, t_down_s=1.3, t_up_s=0.6, t_compute_s=0.1, t_framework_s=6.0,
                          total_s=8.0, parts={}, bulk={"down_s": 0.16, "up_s": 0.42}, down_before_pushed_s=0.0)
    write_json_atomic(tmp_path / SUMMARY_FILE, {**EMULATE.stamp(), "messages": [msg.to_json()]})
    stretched = [{"round": 2, "client": 0, "stage": "fit", "down_s": 1.3, "up_s": 0.6}]
    assert V.add_message_details(stretched, tmp_path)
    assert not V.add_message_details([], tmp_path / "gone")  # the run directory is gone: nothing to add
    usual = [{"round": 2, "client": 0, "stage": "fit", "down_s": 0.5, "up_s": 0.6}]  # no details: not known
    model = {"simulate": {"rounds": _rounds([9.0, 9.0], (8.0, 10.0)),
                          "transfers": [{"round": 2, "client": 0, "stage": "fit", "down_s": 0.5, "up_s": 0.55}]},
             "estimate": {"rounds": _rounds([9.0, 9.0], (8.0, 10.0))}}
    row = V.row_result("r", [{"dilation": 7.0, "rounds": _rounds([9.0, 9.1]), "transfers": stretched},
                             {"dilation": 7.0, "rounds": _rounds([9.0, 9.2]), "transfers": usual}], model)
    assert row["transfers_ge_1s"] == 0 and row["transfer_median_abs_error"] is None  # the model times none ≥ 1 s
    assert row["transfers_either_ge_1s"] == 1 and row["transfer_median_abs_error_either_ge_1s"] == pytest.approx(1.6)
    s = row["stretched_transfers"]
    assert (s["count"], s["downloads"], s["with_details"], s["met_push"]) == (1, 1, 1, 0)
    assert s["payload_median_s"] == pytest.approx(0.16) and s["model_median_s"] == pytest.approx(0.5)


def test_the_log_resumes_keeps_failures_and_refuses_a_moved_model(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(V, "LOG", tmp_path / "runs.jsonl")
    state = {"model_version": "m-a", "calibration": "c-a", "calibration_file": "x", "calibration_created_utc": "t",
             "commit": "0" * 40, "dirty": False}
    monkeypatch.setattr(V, "frozen_now", lambda calibration=None: dict(state))
    freeze = V.current_freeze([], new=False)
    assert freeze["id"] == 1 and V.read_log()[0]["kind"] == "freeze"
    assert V.current_freeze(V.read_log(), new=False)["created_utc"] == freeze["created_utc"]  # resumes
    V.append({"kind": "trial", "freeze": 1, "row": "r", "trial": 0, "status": "failed", "error": "boom"})
    state["model_version"] = "m-b"
    with pytest.raises(SystemExit, match="model_version changed"):
        V.current_freeze(V.read_log(), new=False)
    monkeypatch.setattr(V, "GRID", V.GRID_1)  # another validation needs configs the first did not run
    assert V.current_freeze(V.read_log(), new=True)["id"] == 2  # another validation; the first stays
    out = V.summarize(V.read_log())
    assert [v["freeze"]["id"] for v in out["validations"]] == [1, 2]
    assert out["run_log"][0]["status"] == "failed"  # a failed run stays visible
    monkeypatch.setattr(V, "RESULT", tmp_path / "validation.json")
    text = validation_markdown(out)
    assert "1 failed; 1 × boom (r trial)" in text and "No row finished yet" in text
    json.dumps(out)  # the result is plain JSON
    # a note beside a run (what happened on the host while it ran) stays in the log and under the table,
    # and is not counted as a run
    V.append({"kind": "note", "freeze": 1, "row": "r", "trial": 0, "utc": "u", "text": "another run shared the host"})
    text = validation_markdown(V.summarize(V.read_log()))
    assert "1 failed; 1 × boom" in text and "Note on validation 1, r trial 0 (u): another run shared the host" in text


def test_a_freeze_records_its_cpu_and_resumes_only_on_that_kind_of_cpu(tmp_path: Path, monkeypatch) -> None:
    """A shared VM can come back on another kind of host (2026-12-07: an AMD EPYC after an Intel Xeon, whose
    ECDH took half the time): rows emulated there would test the host against another machine's calibration."""
    monkeypatch.setattr(V, "LOG", tmp_path / "runs.jsonl")
    monkeypatch.setattr(V, "ONE_DILATION", None)
    state = {"model_version": "m-a", "calibration": "c-a", "calibration_file": "x", "calibration_created_utc": "t",
             "calibration_cpu": None, "commit": "0" * 40, "dirty": False}
    monkeypatch.setattr(V, "frozen_now", lambda calibration=None: dict(state))
    monkeypatch.setattr(V, "cpu", lambda: "Intel(R) Xeon(R) Processor")
    assert V.current_freeze([], new=False)["cpu"] == "Intel(R) Xeon(R) Processor"
    assert V.current_freeze(V.read_log(), new=False)["id"] == 1  # the same CPU: resumes
    monkeypatch.setattr(V, "cpu", lambda: "AMD EPYC")
    with pytest.raises(SystemExit, match="frozen on a Intel.*this host is a AMD EPYC"):
        V.current_freeze(V.read_log(), new=False)
    # a new freeze refuses a calibration measured on another CPU than this host's
    monkeypatch.setattr(V, "GRID", V.GRID_1)
    state["calibration_cpu"] = "Intel(R) Xeon(R) Processor"
    with pytest.raises(SystemExit, match="measured on a Intel.*this host is a AMD EPYC"):
        V.current_freeze(V.read_log(), new=True)
    state["calibration_cpu"] = "AMD EPYC"
    assert V.current_freeze(V.read_log(), new=True)["id"] == 2


def test_the_calibrations_cpu_is_its_provenances_else_its_crypto_machines() -> None:
    """validation 4's calibration names no CPU in its provenance; its crypto was timed on an Intel Xeon."""
    state = V.frozen_now("benchmarks/results/calibration-dilation7.toml")
    assert state["calibration_cpu"] == "Intel(R) Xeon(R) Processor"


def _run_with_messages(run_dir: Path, errors: list[str | None]) -> None:
    """A finished emulate run's emulate.json holding one message per entry of ``errors`` (None: a reply)."""
    from fedbw.engines.emulate.run import SUMMARY_FILE
    from fedbw.files.atomic import write_json_atomic
    from fedbw.files.versioned import EMULATE
    from fedbw.results.messages import MeasuredMessage

    msgs = [MeasuredMessage(round=1, client_id=i, stage="collect_masked_vectors", bytes_down=1.0, bytes_up=1.0,
                            flower_bytes_down=1.0, flower_bytes_up=1.0, t_down_s=0.1, t_up_s=0.1, t_compute_s=0.0,
                            t_framework_s=1.0, total_s=1.0, parts={}, error=err).to_json()
            for i, err in enumerate(errors)]
    run_dir.mkdir(parents=True)
    write_json_atomic(run_dir / SUMMARY_FILE, {**EMULATE.stamp(), "messages": msgs})


def test_a_trial_that_lost_replies_is_not_ok_and_one_logged_ok_can_be_found_invalid_on_evidence_only(
        tmp_path: Path, monkeypatch) -> None:
    """No row plans a dropout: a reply Flower lost means the trial did not measure its config (2026-12-06:
    every SecAgg+ upload of a ResNet-18 trial was lost and the trial passed as ok). A trial logged ok before
    that check can be marked invalid, only when its run directory shows the lost replies; it stays in the
    log and under the table, and the row runs it again."""
    lost = "3: Reply message objects are unavailable.\nmore"
    _run_with_messages(tmp_path / "runs" / "lost", [None, lost])
    _run_with_messages(tmp_path / "runs" / "fine", [None, None])
    assert V.lost_replies(tmp_path / "runs" / "lost") == [
        "round 1, client 1, collect_masked_vectors: 3: Reply message objects are unavailable."]
    assert V.lost_replies(tmp_path / "runs" / "fine") == [] and V.lost_replies(tmp_path / "gone") == []
    monkeypatch.setattr(V, "LOG", tmp_path / "runs.jsonl")
    monkeypatch.setattr(V, "ROOT", tmp_path)
    V.append({"kind": "freeze", "id": 1, "trials": 2, "grid": ["r"], "model_version": "m-a", "calibration": "c-a"})
    for t, d in ((0, "runs/lost"), (1, "runs/fine")):
        V.append({"kind": "trial", "freeze": 1, "row": "r", "trial": t, "status": "ok", "run_dir": d, "rounds": [],
                  "transfers": []})
    V.append({"kind": "model", "freeze": 1, "row": "r", "status": "ok", "simulate": {"rounds": []}})
    assert V.open_freeze(V.read_log()) is None  # both trials ok: the grid looks done
    with pytest.raises(SystemExit, match="no lost reply"):  # rounds that merely look wrong are no evidence
        V.invalidate(V.read_log(), "r", 1, "looks slow")
    with pytest.raises(SystemExit, match="needs the reason"):
        V.invalidate(V.read_log(), "r", 0, " ")
    entry = V.invalidate(V.read_log(), "r", 0, "Flower's push session was not dilated")
    assert entry["lost_replies"] == V.lost_replies(tmp_path / "runs" / "lost")
    assert [e["trial"] for e in V.ok_runs(V.read_log(), 1, "r", "trial")] == [1]  # the row runs trial 0 again
    assert V.open_freeze(V.read_log())["id"] == 1
    with pytest.raises(SystemExit, match="no valid ok trial 0"):
        V.invalidate(V.read_log(), "r", 0, "again")
    monkeypatch.setattr("sys.argv", ["validate.py", "--invalid", "r", "first", "why"])
    with pytest.raises(SystemExit, match="TRIAL is a trial's number"):  # a sentence, not a traceback
        V.main()
    # from now on a trial that lost replies is logged failed as it ends, its rounds kept for the record
    import fedbw.engines.app_start as app_start

    monkeypatch.setattr(app_start, "host_reference_s", lambda: 1.0)
    monkeypatch.setattr(V, "run_engine", lambda cfg, engine: type("Res", (), {
        "run_dir": str(tmp_path / "runs" / "lost"), "clients": [], "rounds": []})())
    monkeypatch.setattr(V, "head_commit", lambda: "0" * 40)
    V.emulate_trial({"id": 1, "dilation": 7.0}, "r", 0, {"clients": {"total": 2}})
    last = V.read_log()[-1]
    assert last["status"] == "failed" and last["error"].startswith("1 replies lost; first: round 1, client 1")
    assert last["run_dir"] == "runs/lost" and last["rounds"] == [] and len(last["lost_replies"]) == 1
    out = V.summarize(V.read_log())
    text = validation_markdown({**out, "validations": []})  # the run log's lines (the freeze here is a stub)
    assert "4 runs, 1 failed; 1 × 1 replies lost; first: round 1" in text
    assert "; 1 logged ok and found invalid later" in text
    assert ("- Found invalid, validation 1, r trial 0 (" in text and "`runs/lost`): 1 replies lost (first: round 1, "
            "client 1, collect_masked_vectors: 3: Reply message objects are unavailable.). Flower's push session "
            "was not dilated" in text)


def test_a_freeze_stays_open_until_every_row_is_done_or_it_is_abandoned_with_a_reason(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    """The guard below reads ``open_freeze``: open while any row lacks a trial or its model runs, closed when
    the grid is done, or on purpose by ``--abandon WHY``, whose reason the validation table prints."""
    monkeypatch.setattr(V, "LOG", tmp_path / "runs.jsonl")
    freeze = {"kind": "freeze", "id": 1, "trials": 2, "grid": ["a", "b"], "model_version": "m-a"}
    V.append(freeze)
    assert V.open_freeze(V.read_log())["id"] == 1
    for rid in ("a", "b"):
        V.append({"kind": "trial", "freeze": 1, "row": rid, "trial": 0, "status": "ok"})
        V.append({"kind": "trial", "freeze": 1, "row": rid, "trial": 1, "status": "failed", "error": "boom"})
        V.append({"kind": "model", "freeze": 1, "row": rid, "status": "ok"})
    assert V.open_freeze(V.read_log()) is not None  # a failed trial is not a done one
    V.append({"kind": "trial", "freeze": 1, "row": "a", "trial": 1, "status": "ok"})
    assert not V.row_done(V.read_log(), freeze, "b") and V.row_done(V.read_log(), freeze, "a")
    with pytest.raises(SystemExit, match="needs the reason"):
        V.abandon(V.read_log(), "  ")
    entry = V.abandon(V.read_log(), "the host was taken away")
    assert entry["text"] == "abandoned with 1 of 2 rows done: the host was taken away"
    assert V.open_freeze(V.read_log()) is None
    with pytest.raises(SystemExit, match="nothing to abandon"):
        V.abandon(V.read_log(), "again")
    V.append({**freeze, "id": 2})
    for rid in ("a", "b"):
        V.append({"kind": "model", "freeze": 2, "row": rid, "status": "ok"})
        for t in (0, 1):
            V.append({"kind": "trial", "freeze": 2, "row": rid, "trial": t, "status": "ok"})
    assert V.open_freeze(V.read_log()) is None  # finished
    with pytest.raises(SystemExit, match="needs the text"):
        V.note(V.read_log(), " ")
    assert V.note(V.read_log(), " trial 0 of b was stopped by hand ")["freeze"] == 2  # the last validation's
    assert V.open_freeze(V.read_log()) is None and V.last_freeze(V.read_log())["id"] == 2  # a note closes nothing
    notes = [e for e in V.read_log() if e["kind"] == "note"]
    text = validation_markdown({"validations": [], "targets": V.TARGETS, "date": "d", "run_log": notes})
    assert "- Note on validation 1 (" in text and "abandoned with 1 of 2 rows done: the host was taken away" in text
    assert "- Note on validation 2 (" in text and "trial 0 of b was stopped by hand" in text
    V.append({**freeze, "id": 3})
    V.abandon(V.read_log(), "a wrong grid")
    with pytest.raises(SystemExit, match="no validation to note on"):
        V.note(V.read_log(), "late")


def test_no_model_change_lands_while_a_validation_is_open() -> None:
    """The committed run log's open validation holds the model and its calibration: a change to either
    fails here until the grid is done, or until ``benchmarks/validate.py --abandon WHY`` closes it on purpose.
    (With no validation open there is nothing to hold.)"""
    freeze = V.open_freeze(V.read_log())
    if freeze is None:
        return
    now = V.frozen_now(freeze.get("calibration_path"))
    moved = {k: f"{freeze[k]} → {now[k]}" for k in ("model_version", "calibration") if freeze[k] != now[k]}
    assert not moved, (f"validation {freeze['id']} (frozen {freeze['created_utc']}) is open and holds the model: "
                       f"{moved}. Land this after its grid is done, or close it on purpose with "
                       "benchmarks/validate.py --abandon WHY")


def test_the_stability_table_counts_rows_within_three_percent() -> None:
    from fedbw.report.stability_table import stability_markdown

    data = {"date": "d", "machine": "m", "shipped": {"fingerprint": "c-a", "created_utc": "t1"},
            "other": {"file": "f.toml", "fingerprint": "c-b", "created_utc": "t2", "measured_by": "fedbw calibrate"},
            "rows": [{"row": "r1", "shipped_s": 10.0, "other_s": 10.2, "diff": 0.02},
                     {"row": "r2", "shipped_s": 10.0, "other_s": 8.7, "diff": -0.13}],
            "max_abs_diff": 0.13}
    text = stability_markdown(data)
    assert "1 of 2 rows within 3 %" in text and "largest difference -13.0 %" in text
    assert "different dilations" not in text and "dilation ?" in text
    # two calibrations at different dilations: their difference is not the hour's alone, and the table says so
    data["shipped"]["dilation"], data["other"]["dilation"] = 7.0, 2.0
    assert "Measured at different dilations (7 and 2)" in stability_markdown(data)
    data["other"]["dilation"] = 7.0
    assert "different dilations" not in stability_markdown(data)
    # validation 4's calibration is a file, set against another file (--stability OTHER --against BASE)
    data["shipped"]["file"] = "benchmarks/results/calibration-dilation7.toml"
    text = stability_markdown(data)
    assert text.startswith("Calibration (`benchmarks/results/calibration-dilation7.toml`) c-a") and "| base |" in text
    assert "host speed" not in text  # a file written before the rescaled diagnosis renders as it did
    # the diagnosis beside the check: the other file at the base's host speed, counted on its own line
    data["rescaled"] = {"base_reference_s": 1.37, "other_reference_s": 1.50, "factor": 1.37 / 1.50}
    data["rows"][0].update(other_at_base_speed_s=9.8, diff_at_base_speed=-0.02)
    data["rows"][1].update(other_at_base_speed_s=9.9, diff_at_base_speed=-0.01)
    text = stability_markdown(data)
    assert "| other at base's host speed | difference |" in text and "| 9.80 s | -2.0 % |" in text
    assert "1 of 2 rows within 3 %; largest difference -13.0 %" in text  # the check is still the unrescaled one
    assert "reference 1.37 s against 1.50 s, every CPU constant × 0.913), 2 of 2 rows within 3 %" in text


def test_stability_sets_another_calibration_against_the_shipped_one_or_against_a_given_file(tmp_path: Path,
                                                                                          monkeypatch) -> None:
    """--stability OTHER sets OTHER against the shipped calibration; with --against BASE against BASE (validation
    4's calibration is a file measured at its dilation, not the shipped one)."""
    import fedbw.engines.estimate as estimate
    from fedbw.calibration.file import Calibration, Constant, write_calibration

    for name, start, reference in (("base.toml", 1.0, 1.0), ("other.toml", 1.5, 1.25)):
        write_calibration(tmp_path / name, Calibration({"clientapp_start_s": Constant(start)},
                                                       {"created_utc": name, "dilation": 7.0,
                                                        "host_reference_s": reference}))
    seen: list = []
    rescaled: list[float] = []

    class Rounds:
        def __init__(self, cal: object) -> None:
            seen.append(cal)
            if cal is not None and "at-base-speed" in cal:
                from fedbw.calibration.file import read_calibration

                rescaled.append(read_calibration(cal).constants["clientapp_start_s"].value)
                self.rounds = [type("R", (), {"round": 2, "round_time_s": 10.2})()]
                return
            self.rounds = [type("R", (), {"round": 2, "round_time_s": 10.0 if cal is None or "base" in cal
                                          else 11.0})()]

    monkeypatch.setattr(estimate, "run_estimate", lambda plan, run_id: Rounds(plan.config.deployment.calibration))
    data = V.stability(tmp_path / "other.toml", tmp_path / "base.toml")
    assert {str(tmp_path / "base.toml"), str(tmp_path / "other.toml")} < set(seen)
    assert data["shipped"]["file"] == str(tmp_path / "base.toml") and data["shipped"]["dilation"] == 7.0
    assert all(r["diff"] == pytest.approx(0.1) for r in data["rows"]) and len(data["rows"]) == len(V.GRID)
    assert all(r["diff_at_base_speed"] == pytest.approx(0.02) for r in data["rows"])
    assert rescaled == pytest.approx([1.2] * len(V.GRID))  # the other file's start × 1.0 / 1.25
    assert data["rescaled"] == {"base_reference_s": 1.0, "other_reference_s": 1.25, "factor": 0.8}
    seen.clear()
    assert V.stability(tmp_path / "other.toml")["shipped"]["file"] is None and None in seen
    for argv, says in ((["--against", str(tmp_path / "base.toml")], "--against goes with --stability"),
                       (["--stability", str(tmp_path / "none.toml")], "no such calibration file")):
        monkeypatch.setattr("sys.argv", ["validate.py", *argv])
        with pytest.raises(SystemExit, match=says):
            V.main()


def test_a_stability_check_against_a_file_does_not_replace_the_one_against_the_shipped_calibration() -> None:
    assert V.stability_file(None) == V.STABILITY
    other = V.stability_file(Path("benchmarks/results/calibration-dilation7.toml"))
    assert other != V.STABILITY and other.name == "validation-stability-calibration-dilation7.json"
    from fedbw.report.doc_blocks import TABLES
    import fedbw.report.stability_table  # noqa: F401  (registers the tables)

    assert "fidelity.stability-dilation7" in TABLES  # docs/fidelity.md renders that file in its own block


def test_a_validation_of_an_earlier_model_stays_visible_and_says_so(tmp_path: Path, monkeypatch) -> None:
    """Validations are never dropped from the docs when the model moves on: each names its model and
    whether it is this fedbw's."""
    from fedbw.netmodel.version import model_version

    monkeypatch.setattr(V, "LOG", tmp_path / "runs.jsonl")
    for version, grid in (("m-old", V.GRID_1), (model_version(), V.GRID)):
        monkeypatch.setattr(V, "GRID", grid)
        monkeypatch.setattr(V, "frozen_now", lambda calibration=None, v=version: {
            "model_version": v, "calibration": "c-a", "calibration_file": "x", "calibration_created_utc": "t",
            "commit": "0" * 40, "dirty": False})
        V.current_freeze(V.read_log(), new=True)
    text = validation_markdown(V.summarize(V.read_log()))
    assert "**Validation 1** of not the current model" in text and "**Validation 2** of the current model" in text
    assert f"({model_version()}), which validation 2 checks" in text and "no validation has checked" not in text


def test_the_trials_gap_is_the_spread_of_their_means_over_the_pooled_mean() -> None:
    from fedbw.report.validation_table import _repeatability, trial_gap

    row = {"trials": 2, "emulate_steady_rounds_s": [10.0, 10.0, 11.0, 11.0]}  # trial means 10 and 11
    assert trial_gap(row) == pytest.approx(1.0 / 10.5)
    assert trial_gap({"trials": 2, "emulate_steady_rounds_s": [10.0, 11.0, 12.0]}) is None  # uneven
    assert trial_gap({"trials": 1, "emulate_steady_rounds_s": [10.0]}) is None
    same = {"trials": 2, "emulate_steady_rounds_s": [9.0, 9.0, 9.0, 9.0]}
    text = _repeatability([row, same, row], 0.05)
    assert "a median 9.5 % apart (largest 9.5 %); in 2 of 3 rows further apart than the 5 %" in text


def test_the_model_change_line_says_whether_the_grids_rounds_moved() -> None:
    from fedbw.netmodel.version import model_version
    from fedbw.report.validation_table import model_change_markdown

    data = {"date": "d", "frozen_model": "m-old", "frozen_commit": "a" * 40, "current_model": model_version(),
            "rows": {"a": {"frozen": [1.0], "current": [1.0]}}, "max_rel_diff": 0.0, "rows_differing": []}
    assert "the same rounds, bit for bit" in model_change_markdown(data)
    moved = {**data, "max_rel_diff": 0.02, "rows_differing": ["a"], "current_model": "m-other"}
    text = model_change_markdown(moved)
    assert "differ by at most 2 % (rows: a)" in text and "not checked here" in text


def test_the_part_gaps_are_split_into_plain_and_secagg_rows() -> None:
    """Where the engines differ, per part: one mean over the plain rows and one over the SecAgg+ rows."""
    from fedbw.flower_protocol import FRAMEWORK_PARTS
    from fedbw.report.validation_table import _part_gaps

    def row(name: str, start_gap: float) -> dict:
        model = dict.fromkeys(FRAMEWORK_PARTS, 1.0)
        return {"row": name, "simulate_parts_s": model,
                "emulate_parts_s": {**model, "clientapp_start_s": 1.0 + start_gap}}

    text = _part_gaps([row("a-2", 0.5), row("b-4", 1.5), row("c-4-secagg", 3.0), {"row": "d-2"}])
    assert "plain rows (2): " in text and "SecAgg+ rows (1): " in text
    assert "clientapp_start +1.00 s" in text.split(";")[0] and "(sum +1.00 s)" in text.split(";")[0]
    assert "clientapp_start +3.00 s" in text.split(";")[1] and "supernode_poll +0.00 s" in text.split(";")[1]
    assert _part_gaps([{"row": "d-2"}]) == ""


def test_the_verdict_says_which_way_the_model_misses() -> None:
    from fedbw.report.validation_table import _sign

    rows = [{"mean_error": 0.1}, {"mean_error": -0.02}, {"mean_error": 0.3}, {"mean_error": None}]
    assert _sign(rows) == (" Emulate's mean round is longer than the model's in 2 of 3 rows (mean errors -2.0 % to "
                           "+30.0 %).")
    assert _sign([{"mean_error": None}]) == ""


def test_stopping_a_grid_by_hand_writes_the_result_and_says_how_to_resume(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C in a trial: emulate_trial logs it as interrupted and re-raises; main ends with a sentence and the
    result of what finished, not a traceback."""
    freeze = {"id": 4, "model_version": "m-a", "calibration": "c-a", "commit": "0" * 40}
    monkeypatch.setattr(V, "current_freeze", lambda log, new, calibration=None: freeze)
    monkeypatch.setattr(V, "read_log", lambda: [])

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(V, "run_grid", interrupted)
    monkeypatch.setattr(V, "summarize", lambda log: {"validations": []})
    monkeypatch.setattr(V, "RESULT", V.ROOT / "benchmarks" / "results" / "validation.json")  # for relative_to
    written: list[str] = []
    monkeypatch.setattr(Path, "write_text", lambda self, text, encoding=None: written.append(str(self)))
    monkeypatch.setattr("sys.argv", ["validate.py"])
    with pytest.raises(SystemExit, match="stopped by hand.*run again to resume"):
        V.main()
    assert written == [str(V.RESULT)]
