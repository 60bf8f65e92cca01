"""Records for any Flower app, unmodified (``fedbw emulate --app``): rounds from message groups, time
split from the SuperNodes' logs and the shaper's byte series.

Without the app's cooperation compute cannot be told apart from ClientApp start-up, so a stage's time
between "received" and "reply ready" is framework + compute together in ``t_framework_s``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedbw.engines.emulate.clients import clients_for_profile
from fedbw.engines.emulate.federation import LOGS_DIR, DropFault, EmulationResult, MessageMeasure, emulate_app
from fedbw.netmodel.payload import SECAGG_STAGES
from fedbw.results.records import ClientRoundRecord, RecordWriter, RoundRecord, StageRecord
from fedbw.tomlvalue import split_assignment


def stage_names(spans_in_round: int, message_types: Sequence[str]) -> list[str]:
    """Stage names for one client's messages of one round: SecAgg+'s four when it is four trains."""
    if spans_in_round == len(SECAGG_STAGES) and all(t == "train" for t in message_types):
        return list(SECAGG_STAGES)
    if spans_in_round == 1 and message_types[0] == "train":
        return ["fit"]
    seen: dict[str, int] = {}
    out = []
    for t in message_types:
        k = seen.get(t, 0)
        seen[t] = k + 1
        out.append(t if k == 0 else f"{t}-{k}")
    return out


def app_records(result: EmulationResult, run_id: str, engine: str = "emulate",
                ) -> tuple[list[ClientRoundRecord], list[RoundRecord]]:
    """Records for a run of any Flower app: rounds from message groups, time split from the logs.

    Without the app's cooperation compute cannot be told apart from ClientApp start-up, so a stage's
    time between "received" and "reply ready" is framework + compute together in ``t_framework_s``;
    ``extra`` carries the split where the logs allow it.
    """
    by_round: dict[int, dict[int, list[MessageMeasure]]] = {}
    for m in result.messages:
        if m.round is None or m.round <= 0:
            continue
        by_round.setdefault(m.round, {}).setdefault(m.client_id, []).append(m)
    profile = {c.client_id: c.profile for c in result.clients}
    clients_out: list[ClientRoundRecord] = []
    rounds_out: list[RoundRecord] = []
    prev_end: float | None = None
    for r in sorted(by_round):
        per_client = by_round[r]
        crecs = []
        stage_bounds: dict[str, list[float]] = {}
        for cid, msgs in sorted(per_client.items()):
            names = stage_names(len(msgs), [m.span.message_type for m in msgs])
            stages = []
            for name, m in zip(names, msgs):
                t_end = m.span.t_sent_s or m.span.t_sending_s or m.span.t_receiving_s
                total = t_end - (m.down.first_in_s or m.span.t_receiving_s)
                fw = max(0.0, total - m.down.duration_s - m.up.duration_s)
                stages.append(StageRecord(name, float(m.down.bytes), float(m.up.bytes), m.down.duration_s, 0.0,
                                          m.up.duration_s, fw))
                b = stage_bounds.setdefault(name, [m.down.first_in_s or m.span.t_receiving_s, t_end])
                b[0], b[1] = min(b[0], m.down.first_in_s or m.span.t_receiving_s), max(b[1], t_end)
            dropped = cid in result.dropped and not all(m.span.complete for m in msgs)
            crecs.append(ClientRoundRecord(run_id, engine, r, cid, profile.get(cid, "?"), stages, dropped=dropped))
        start = min(b[0] for b in stage_bounds.values())
        end = max(b[1] for b in stage_bounds.values())
        comm = sum(max((s.t_down_s + s.t_up_s for c in crecs for s in c.stages if s.stage == name), default=0.0)
                   for name in stage_bounds)
        round_time = end - start
        rounds_out.append(RoundRecord(
            run_id=run_id, engine=engine, round=r, num_clients=len(crecs), round_time_s=round_time,
            comm_time_s=comm, compute_time_s=0.0, framework_time_s=max(0.0, round_time - comm),
            stage_times_s={n: b[1] - b[0] for n, b in stage_bounds.items()},
            bytes_down_total=sum(c.bytes_down for c in crecs), bytes_up_total=sum(c.bytes_up for c in crecs),
            wall_time_s=(end - prev_end) if prev_end is not None else None,
            extra={"clock": "wall", "bytes": "wire (shaper ledger)", "compute": "not separated (foreign app)"}))
        prev_end = end
        clients_out += crecs
    return clients_out, rounds_out



@dataclass
class AppRun:
    """``fedbw emulate --app``: the measurement and its records."""

    result: EmulationResult
    clients: list[ClientRoundRecord]
    rounds: list[RoundRecord]
    out_dir: Path | None


def run_app(app_dir: Path, num_clients: int, profile: str, *, rounds: int | None = None,
            run_config: Sequence[str] = (), timeout_s: float = 1800.0, out_dir: Path | None = None,
            seed: int = 0, drops: Sequence[DropFault] = ()) -> AppRun:
    """Any Flower app, unmodified, with ``num_clients`` SuperNodes on ``profile`` links.

    ``rounds`` sets the app's ``num-server-rounds`` (Flower's template key); ``run_config`` items are
    ``key=value`` (TOML values) passed to ``flwr run --run-config``.
    """
    cfg: dict[str, Any] = dict(split_assignment(item, "--run-config", "num-server-rounds=3") for item in run_config)
    if rounds is not None:
        cfg["num-server-rounds"] = rounds
    clients = clients_for_profile(num_clients, profile, seed)
    logs = out_dir / LOGS_DIR if out_dir is not None else None
    result = emulate_app(Path(app_dir), clients, run_config=cfg or None, timeout_s=timeout_s, logs_to=logs,
                         drops=drops)
    run_id = out_dir.name if out_dir is not None else f"app-{result.flower_run_id}"
    crecs, rrecs = app_records(result, run_id)
    if out_dir is not None:
        with RecordWriter(out_dir / "records.jsonl") as w:
            for r in rrecs:
                w.write([*(c for c in crecs if c.round == r.round), r])
    return AppRun(result, crecs, rrecs, out_dir)
