"""``fedbw emulate --app DIR``: any Flower app, unmodified, on the Deployment Engine behind shaped links.

Flower launches a wrapped copy of the app (:func:`fedbw.engines.foreign_app.wrapped_copy`): the app's
own ServerApp and ClientApp inside fedbw's measuring wrappers, which log every message the ServerApp
sends and gets back — its round (group id, or the ``server-round`` the message-API strategies send),
its stage (train, evaluate, SecAgg+ stages), Flower's bytes, the app's time on it. Each message is then
joined with the SuperNode span and the link bytes that carried it and split into link, compute and
framework time, exactly as for fedbw's own apps (:mod:`.recorder`, :mod:`.attribution`). Without the
app's cooperation, compute is the app's whole time on a message (training cannot be told apart).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedbw.engines.base import NoProgress, Progress
from fedbw.engines.emulate.clients import clients_for_plan
from fedbw.engines.emulate.federation import LOGS_DIR, DropFault, EmulationResult, emulate_app, resolve_dilation
from fedbw.engines.emulate.recorder import RoundRecorder
from fedbw.engines.emulate.run import SUMMARY_FILE, write_summary
from fedbw.engines.foreign_app import EVENTS_ENV, NODES_ENV, app_plan, check_app_dir, wrapped_copy
from fedbw.errors import RunError
from fedbw.links import server_shaper_spec
from fedbw.plan import Plan
from fedbw.results.records import ClientRoundRecord, RecordWriter, RoundRecord
from fedbw.tomlvalue import split_assignment

ENGINE = "emulate"
EVENTS_FILE = "events.jsonl"


@dataclass
class AppRun:
    """``fedbw emulate --app``: the measurement and its records."""

    result: EmulationResult
    clients: list[ClientRoundRecord]
    rounds: list[RoundRecord]
    out_dir: Path | None


@dataclass
class PreparedApp:
    """An app ready to emulate: its directory, the federation it runs in (the plan), the run config it
    gets, and how the federation is laid out. The runner gives it a run directory and a records writer
    (:func:`fedbw.runner.run_app`); :func:`execute_app` runs it."""

    app_dir: Path
    plan: Plan
    overrides: dict[str, Any]
    timeout_s: float
    drops: Sequence[DropFault]
    hosts: Any
    tls: bool
    supernode_auth: bool

    @property
    def num_clients(self) -> int:
        return len(self.plan.clients)


def prepare_app(app_dir: Path, num_clients: int, profile: str, *, rounds: int | None = None,
                run_config: Sequence[str] = (), timeout_s: float = 1800.0, seed: int = 0,
                drops: Sequence[DropFault] = (), server_link: str | None = None, dilation: float | str = 1.0,
                cap_cpu: bool = True, hosts: Any = None, tls: bool = False,
                supernode_auth: bool = False) -> PreparedApp:
    """Any Flower app, unmodified, with ``num_clients`` SuperNodes on ``profile`` links: checked and planned.

    ``rounds`` sets the app's ``num-server-rounds`` (Flower's template key); ``run_config`` items are
    ``key=value`` (TOML values) passed to ``flwr run --run-config``. ``dilation`` (K or "auto") and
    ``cap_cpu`` as for ``[emulate]`` in a config (docs/emulate.md). ``hosts``: a
    :class:`~fedbw.engines.emulate.hosts.NetnsHosts` puts every process on a network host of its own.
    ``tls`` and ``supernode_auth`` as ``[emulate] tls`` and ``supernode_auth`` (checked the same way).
    """
    app_dir = Path(app_dir).resolve()
    check_app_dir(app_dir)
    overrides: dict[str, Any] = dict(split_assignment(i, "--run-config", "num-server-rounds=3") for i in run_config)
    if rounds is not None:
        overrides["num-server-rounds"] = rounds
    plan = app_plan(num_clients, profile, seed=seed, server_link=server_link, name=app_dir.name, engine=ENGINE,
                    emulate={"dilation": dilation, "cap_cpu": cap_cpu, "timeout_s": timeout_s, "tls": tls,
                             "supernode_auth": supernode_auth, "hosts": "loopback" if hosts is None else hosts.name})
    return PreparedApp(app_dir, plan, overrides, timeout_s, drops, hosts, tls, supernode_auth)


def execute_app(app: PreparedApp, run_dir: Path, writer: RecordWriter, progress: Progress = NoProgress) -> AppRun:
    """Emulate ``app`` into ``run_dir``: its records through ``writer``, emulate.json and the logs beside."""
    plan, n = app.plan, app.num_clients
    events_path = run_dir / EVENTS_FILE
    events_path.unlink(missing_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="fedbw-app-"))
    dropped: list[int] = []
    recorder = RoundRecorder(plan, run_dir.name, events_path, writer, progress, lambda: dropped)
    try:
        wrapped = wrapped_copy(app.app_dir, tmp)
        res = emulate_app(wrapped, clients_for_plan(plan), run_config=app.overrides or None, timeout_s=app.timeout_s,
                          logs_to=run_dir / LOGS_DIR, drops=app.drops, tick=recorder.on_tick,
                          env_extra={EVENTS_ENV: str(events_path), NODES_ENV: str(n)},
                          shared_link=server_shaper_spec(plan.config.server.link),
                          dilation=resolve_dilation(plan.config.emulate.dilation, n),
                          cap_cpu=plan.config.emulate.cap_cpu, hosts=app.hosts, tls=app.tls,
                          supernode_auth=app.supernode_auth, cap_period_ms=plan.config.emulate.cap_period_ms)
        dropped[:] = res.dropped
        recorder.consume(lambda: res.messages)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_summary(run_dir / SUMMARY_FILE, res, recorder)
    if recorder.assembler.error:
        raise RunError(f"emulate --app: the app's ServerApp failed: {recorder.assembler.error}\n"
                       f"records of finished rounds are in {run_dir / 'records.jsonl'}")
    return AppRun(res, recorder.clients, recorder.rounds, run_dir)
