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


def run_app(app_dir: Path, num_clients: int, profile: str, *, rounds: int | None = None,
            run_config: Sequence[str] = (), timeout_s: float = 1800.0, out_dir: Path | None = None,
            seed: int = 0, drops: Sequence[DropFault] = (), server_link: str | None = None,
            dilation: float | str = 1.0, cap_cpu: bool = True, progress: Progress = NoProgress,
            hosts: Any = None, tls: bool = False, supernode_auth: bool = False) -> AppRun:
    """Any Flower app, unmodified, with ``num_clients`` SuperNodes on ``profile`` links.

    ``rounds`` sets the app's ``num-server-rounds`` (Flower's template key); ``run_config`` items are
    ``key=value`` (TOML values) passed to ``flwr run --run-config``. ``dilation`` (K or "auto") and
    ``cap_cpu`` as for ``[emulate]`` in a config (docs/emulate.md). ``hosts``: a
    :class:`~fedbw.engines.emulate.hosts.NetnsHosts` puts every process on a network host of its own.
    ``tls`` and ``supernode_auth`` as ``[emulate] tls`` and ``supernode_auth`` (checked the same way).
    """
    from fedbw.results.rundir import fresh_stamped_dir, write_run_metadata

    app_dir = Path(app_dir).resolve()
    check_app_dir(app_dir)
    overrides: dict[str, Any] = dict(split_assignment(i, "--run-config", "num-server-rounds=3") for i in run_config)
    if rounds is not None:
        overrides["num-server-rounds"] = rounds
    plan = app_plan(num_clients, profile, seed=seed, server_link=server_link, name=app_dir.name, engine=ENGINE,
                    emulate={"dilation": dilation, "cap_cpu": cap_cpu, "timeout_s": timeout_s, "tls": tls,
                             "supernode_auth": supernode_auth, "hosts": "loopback" if hosts is None else "netns"})
    run_dir = Path(out_dir) if out_dir is not None else fresh_stamped_dir(Path("runs"), f"{app_dir.name}-{ENGINE}")
    run_dir.mkdir(parents=True, exist_ok=True)
    write_run_metadata(run_dir, plan.config, device=None)
    events_path = run_dir / EVENTS_FILE
    events_path.unlink(missing_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="fedbw-app-"))
    dropped: list[int] = []
    with RecordWriter(run_dir / "records.jsonl", run_id=run_dir.name, engine=ENGINE) as writer:
        recorder = RoundRecorder(plan, run_dir.name, events_path, writer, progress, lambda: dropped)
        try:
            wrapped = wrapped_copy(app_dir, tmp)
            res = emulate_app(wrapped, clients_for_plan(plan), run_config=overrides or None, timeout_s=timeout_s,
                              logs_to=run_dir / LOGS_DIR, drops=drops, tick=recorder.on_tick,
                              env_extra={EVENTS_ENV: str(events_path), NODES_ENV: str(num_clients)},
                              shared_link=server_shaper_spec(plan.config.server.link),
                              dilation=resolve_dilation(plan.config.emulate.dilation, num_clients),
                              cap_cpu=plan.config.emulate.cap_cpu, hosts=hosts, tls=tls, supernode_auth=supernode_auth)
            dropped[:] = res.dropped
            recorder.consume(lambda: res.messages)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    write_summary(run_dir / SUMMARY_FILE, res, recorder)
    if recorder.assembler.error:
        raise RunError(f"emulate --app: the app's ServerApp failed: {recorder.assembler.error}\n"
                       f"records of finished rounds are in {run_dir / 'records.jsonl'}")
    return AppRun(res, recorder.clients, recorder.rounds, run_dir)
