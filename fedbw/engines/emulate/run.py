"""``fedbw run --engine emulate``: fedbw's apps from a plan on the Deployment Engine behind shaped links.

The plan gives every client its link and faults (:mod:`.clients`); the apps get the serialized plan
through their run config (:mod:`.fedbw_app`); rounds become records as they end (:mod:`.recorder`);
``emulate.json`` keeps what records do not hold (start-up, memory, every message's parts).
``[emulate] hosts``, ``tls`` and ``supernode_auth`` choose where the processes run and how they trust
each other (:mod:`.hosts`, :mod:`.flower`).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from fedbw.engines.base import NoProgress, Progress, RunResult
from fedbw.engines.emulate.clients import clients_for_plan, drops_for_plan
from fedbw.engines.emulate.fedbw_app import write_fedbw_app
from fedbw.engines.emulate.federation import LOGS_DIR, EmulationResult, emulate_app, resolve_dilation
from fedbw.engines.emulate.hosts import hosts_for
from fedbw.engines.emulate.attribution import MessageTimes
from fedbw.engines.emulate.recorder import RoundRecorder
from fedbw.errors import RunError
from fedbw.files.atomic import write_json_atomic
from fedbw.files.versioned import EMULATE, read_json
from fedbw.fl.settings import EVENTS_FILE, PLAN_ENV, write_plan_file
from fedbw.links import server_shaper_spec
from fedbw.plan import Plan
from fedbw.results.messages import MeasuredMessage, message_from_json
from fedbw.results.records import RecordWriter

SUMMARY_FILE = "emulate.json"


def run_emulate(plan: Plan, run_id: str, writer: RecordWriter | None = None,
                progress: Progress = NoProgress) -> RunResult:
    """Run ``plan`` with fedbw's apps on the Deployment Engine behind shaped links; records per round."""
    if writer is None:
        raise RunError("the emulate engine writes records into a run directory; pass a RecordWriter")
    cfg = plan.config
    run_dir = writer.path.parent
    plan_path = write_plan_file(run_dir, plan)
    events_path = run_dir / EVENTS_FILE
    events_path.unlink(missing_ok=True)
    dropped: list[int] = []
    recorder = RoundRecorder(plan, run_id, events_path, writer, progress, lambda: dropped)
    app_parent = Path(tempfile.mkdtemp(prefix="fedbw-app-"))
    failure: BaseException | None = None
    res: EmulationResult | None = None
    progress(1, 0, cfg.clients.per_round)
    try:
        app_dir = write_fedbw_app(app_parent, plan_path)
        clients = clients_for_plan(plan)
        res = emulate_app(app_dir, clients, drops=drops_for_plan(plan), timeout_s=cfg.emulate.timeout_s,
                          logs_to=(run_dir / LOGS_DIR) if cfg.emulate.keep_logs else None, tick=recorder.on_tick,
                          env_extra={PLAN_ENV: str(plan_path)}, shared_link=server_shaper_spec(cfg.server.link),
                          dilation=resolve_dilation(cfg.emulate.dilation, len(clients)), cap_cpu=cfg.emulate.cap_cpu,
                          hosts=hosts_for(cfg.emulate.hosts), tls=cfg.emulate.tls,
                          supernode_auth=cfg.emulate.supernode_auth, cap_period_ms=cfg.emulate.cap_period_ms)
        dropped[:] = res.dropped
        done = res
        recorder.consume(lambda: done.messages)
    except RunError as exc:
        failure = exc
    finally:
        shutil.rmtree(app_parent, ignore_errors=True)
    result = RunResult(run_dir=run_dir, plan=plan, clients=recorder.clients, rounds=recorder.rounds)
    if res is not None:
        write_summary(run_dir / SUMMARY_FILE, res, recorder)
    # a round SecAgg+ halted is not a failure: fedbw's ServerApp logs it and goes on, as Flower does, and its
    # record reads abandoned (fedbw.results.measured_round.mark_halted)
    result.stopped_early = recorder.assembler.stopped_early  # privacy.dp.max_epsilon ended the run early
    short = len(recorder.rounds) < plan.rounds and not result.stopped_early
    if failure is not None or recorder.assembler.error or short:
        why = recorder.assembler.error or (str(failure) if failure else "the ServerApp ended early")
        secagg = cfg.privacy.secagg
        hint = ""
        planned_drops = drops_for_plan(plan)  # [faults] drops and clients.availability's mid-round dropouts
        if secagg.enabled and planned_drops:
            hint = (f"\nSecAgg+ can unmask the sum only if at least reconstruction_threshold = "
                    f"{secagg.reconstruction_threshold} of each client's {cfg.secagg_shares()} share "
                    "holders survive; "
                    f"{len(planned_drops)} drop(s) were planned ({res.dropped if res else []} dropped). "
                    "Plan fewer drops, lower privacy.secagg.reconstruction_threshold or raise num_shares.")
        raise RunError(f"emulate stopped after {len(recorder.rounds)} of {plan.rounds} round(s): {why}{hint}\n"
                       "finished rounds are kept in records.jsonl")
    return result


def write_summary(path: Path, res: EmulationResult, recorder: RoundRecorder) -> None:
    """What the records do not hold: start-up, memory, link totals, every message's parts."""
    data = {
        **EMULATE.stamp(), "flower_run_id": res.flower_run_id, "startup_s": res.startup_s, "run_wall_s": res.run_wall_s,
        "peak_rss_bytes": res.peak_rss_bytes, "dropped": res.dropped,
        "dilation": res.dilation, "cpu_capped": res.cpu_capped,
        "cap_period_ms": res.cap_period_ms, "cpu_note": res.cpu_note, "host_cores": res.host_cores,
        "host_bound_rounds": [r.round for r in recorder.rounds if r.host_bound],
        "link_bytes_up": {str(k): v for k, v in res.bytes_up.items()},
        "link_bytes_down": {str(k): v for k, v in res.bytes_down.items()},
        "messages": [measured_message(r, t).to_json() for r, t in recorder.messages],
        # the host's CPU samples as taken (emulated stamps; real CPU seconds), so a verdict can be read again
        "host_samples": [] if recorder.host is None else [s.as_row() for s in recorder.host.samples],
    }
    write_json_atomic(path, data, indent=1)  # whole or absent, also when the run is being interrupted


def measured_message(round_: int, t: MessageTimes) -> MeasuredMessage:
    """One message's times as the typed record calibration reads."""
    return MeasuredMessage(
        round=round_, client_id=t.client_id, stage=t.stage, bytes_down=t.bytes_down, bytes_up=t.bytes_up,
        flower_bytes_down=t.flower_bytes_down, flower_bytes_up=t.flower_bytes_up, t_down_s=t.t_down_s,
        t_up_s=t.t_up_s, t_compute_s=t.t_compute_s, t_framework_s=t.t_framework_s, total_s=t.total_s,
        parts=dict(t.parts), bulk=dict(t.bulk), error=t.error, objects_down=t.objects_down, objects_up=t.objects_up,
        process_start_s=t.process_start_s, launch_s=t.launch_s, t_receiving_s=t.t_receiving_s,
        t_sent_s=t.t_sent_s, t_host_s=t.t_host_s, t_device_s=t.t_device_s, t_server_s=t.t_server_s,
        down_before_pushed_s=t.down_before_pushed_s, t_serverapp_push_s=t.t_serverapp_push_s,
        serverapp_pushed_with=t.serverapp_pushed_with, t_serverapp_pull_s=t.t_serverapp_pull_s,
        serverapp_pulled_with=t.serverapp_pulled_with)


def read_messages_of_run(run_dir: Path) -> list[MeasuredMessage]:
    """Every message a finished emulate run measured (its emulate.json, schema checked)."""
    path = Path(run_dir) / SUMMARY_FILE
    return [message_from_json(m, f"{path}: messages[{i}]") for i, m in enumerate(read_summary(run_dir)["messages"])]


def messages_by_key(run_dir: Path) -> dict[tuple[int, int, str], MeasuredMessage]:
    """A finished run's measured messages by (round, client, stage): what its records do not carry (the
    payload's own transfer, whether a download met the ServerApp's push); empty when the run directory has
    no emulate.json (gone, or the run did not finish)."""
    if not (Path(run_dir) / SUMMARY_FILE).is_file():
        return {}
    return {(m.round, m.client_id, m.stage): m for m in read_messages_of_run(run_dir)}


def read_summary(run_dir: Path) -> dict[str, Any]:
    """A run directory's emulate.json, its schema checked: ConfigError naming the file when it is missing,
    damaged, or of another fedbw's layout (calibration and benchmarks read its messages)."""
    return read_json(Path(run_dir) / SUMMARY_FILE, EMULATE, "pass the directory of a finished `--engine emulate` run")
