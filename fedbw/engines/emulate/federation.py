"""Any Flower app on a loopback Deployment-Engine federation whose every SuperNode sits behind its own
shaped link — the measurement under both ``fedbw run --engine emulate`` and ``fedbw emulate --app``.

One SuperLink on loopback, the asyncio shaper with one route per client, one SuperNode per client
connecting through its route, one ``flwr run``. While the run goes, a sampler records each link's
byte counters; afterwards each message a SuperNode logged is cut out of those series, so every
client, round and stage gets measured bytes and transfer durations. Every process started here is
stopped on success, failure, a child dying and Ctrl-C; the temporary work directory is removed (logs
are copied out first).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedbw.engines.emulate.flower import FlowerDeployment, RunStatus
from fedbw.engines.emulate.ports import LOOPBACK
from fedbw.engines.emulate.sampler import LedgerSampler, Transfer
from fedbw.engines.emulate.supernode_log import MessageSpan, is_receiving, message_group, parse_supernode_log
from fedbw.errors import ConfigError, RunError
from fedbw.processes import Child, LogLine, Supervisor

#: Downlink: activity right before "Receiving" with no pause longer than this belongs to the message.
HEADER_GAP_S = 1.0
#: Slack around log stamps (pipe latency) when cutting a window out of the byte series.
LOG_SLACK_S = 0.05
#: Where a run directory keeps the emulation's logs (SuperLink, SuperNodes, ServerApp, shaper).
LOGS_DIR = "emulate-logs"
#: How often the summed RSS of Flower's processes is sampled for the peak.
RSS_EVERY_S = 1.0


# ----------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class EmulatedClient:
    """One SuperNode: its fedbw client id (= Flower partition-id), link profile name and link."""

    client_id: int
    profile: str
    link: Any  #: fedbw.shaper.LinkSpec
    node_config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DropFault:
    """Kill client ``client``'s SuperNode (and its ClientApp) as it receives the ``stage_index``-th
    train message of round ``round`` — it never replies, as a phone that lost power."""

    client: int
    round: int
    stage_index: int = 0


# ---------------------------------------------------------------------------------------- outputs


@dataclass
class MessageMeasure:
    """One message at one client: its span in the SuperNode's log and the bytes on its link."""

    client_id: int
    span: MessageSpan
    down: Transfer
    up: Transfer

    @property
    def round(self) -> int | None:
        try:
            return int(self.span.group) if self.span.group is not None else None
        except ValueError:
            return None


@dataclass
class EmulationResult:
    flower_run_id: int | None
    status: RunStatus | None
    clients: list[EmulatedClient]
    messages: list[MessageMeasure]
    bytes_up: dict[int, int]  #: all uplink bytes of the run per client (polling included)
    bytes_down: dict[int, int]
    startup_s: float  #: SuperLink + shaper + SuperNodes up and registered
    run_wall_s: float  #: submit → run finished
    dropped: list[int]
    server_log: str = ""
    issues: list[str] = field(default_factory=list)  #: what the ServerApp's log says went wrong
    logs_dir: Path | None = None
    peak_rss_bytes: int | None = None

    def for_client(self, cid: int) -> list[MessageMeasure]:
        return [m for m in self.messages if m.client_id == cid]


# --------------------------------------------------------------------------------- the emulation


class _Dropper:
    """Watches SuperNode logs and kills a client when its drop fault's message arrives."""

    def __init__(self, drops: Sequence[DropFault]) -> None:
        self.drops = {(d.client, d.round, d.stage_index) for d in drops}
        self.counts: dict[tuple[int, str], int] = {}
        self.group: dict[int, str | None] = {}
        self.dropped: list[int] = []
        self._lock = threading.Lock()

    def hook(self, cid: int) -> Callable[[Child, LogLine], None]:
        def on_line(child: Child, line: LogLine) -> None:
            text = line.text
            if (group := message_group(text)) is not None:
                self.group[cid] = group
                return
            if is_receiving(text) != "train":
                return
            group = self.group.get(cid)
            with self._lock:
                key = (cid, group or "")
                k = self.counts.get(key, 0)
                self.counts[key] = k + 1
                try:
                    rnd = int(group) if group is not None else -1
                except ValueError:
                    rnd = -1
                hit = (cid, rnd, k) in self.drops
                if hit:
                    self.dropped.append(cid)
            if hit:
                child.kill()
        return on_line


class Live:
    """What a run has measured so far, for callers that turn rounds into records as they finish."""

    def __init__(self, sampler: LedgerSampler, supernodes: Mapping[int, Child]) -> None:
        self.sampler = sampler
        self.supernodes = dict(supernodes)

    def measures(self, client_ids: Sequence[int] | None = None) -> list[MessageMeasure]:
        out = []
        for cid, child in self.supernodes.items():
            if client_ids is None or cid in client_ids:
                out += [_measure(self.sampler, cid, span) for span in parse_supernode_log(child.snapshot_lines())]
        return out


def emulate_app(app_dir: Path, clients: Sequence[EmulatedClient], *, run_config: Mapping[str, Any] | None = None,
                drops: Sequence[DropFault] = (), timeout_s: float | None = 1800.0,
                logs_to: Path | None = None, tick: Callable[[Live], None] | None = None,
                superlink_port: int = 0, sample_interval_s: float = 0.005,
                env_extra: Mapping[str, str] | None = None) -> EmulationResult:
    """Run the Flower app in ``app_dir`` on a loopback federation whose links are shaped per client.

    Returns what was measured; raises RunError (with the failing child's last log lines) if a
    process fails to start or dies, or the run fails. ``logs_to`` receives every log (SuperLink,
    SuperNodes, ServerApp, shaper ledger) before the work directory is removed.
    """
    from fedbw.shaper import ClientRoute, ShaperThread

    app_dir = Path(app_dir).resolve()
    check_app_dir(app_dir)
    if not clients:
        raise ConfigError("emulate needs at least one client")
    workdir = Path(tempfile.mkdtemp(prefix="fedbw-emulate-"))
    dropper = _Dropper(drops)
    result: EmulationResult | None = None
    t0 = time.perf_counter()
    try:
        with contextlib.ExitStack() as stack:
            shaper_box: list[Any] = []
            sampler_box: list[LedgerSampler] = []

            def stop_shaper() -> None:  # runs after the supervisor has stopped every process
                for s in sampler_box:
                    s.stop()
                for sh in shaper_box:
                    sh.stop()

            stack.callback(stop_shaper)
            sup = stack.enter_context(Supervisor())
            dep = FlowerDeployment(sup, workdir, env_extra)
            stack.callback(dep.close)
            sl_port = dep.start_superlink(superlink_port)
            routes = [ClientRoute(str(c.client_id), LOOPBACK, 0, LOOPBACK, sl_port, c.link) for c in clients]
            shaper = ShaperThread(routes, ledger_path=workdir / "logs" / "ledger.jsonl").start()
            shaper_box.append(shaper)
            sampler = LedgerSampler(shaper.shaper.ledger, sample_interval_s).start()
            sampler_box.append(sampler)
            n = len(clients)
            for c in clients:
                node_cfg = {"partition-id": c.client_id, "num-partitions": n, **dict(c.node_config)}
                dep.start_supernode(f"client-{c.client_id}", shaper.ports[str(c.client_id)], node_cfg,
                                    on_line=dropper.hook(c.client_id))
            dep.wait_supernodes_ready()
            startup_s = time.perf_counter() - t0
            t_submit = time.perf_counter()
            run_id = dep.submit(app_dir, run_config)
            live = Live(sampler, {c.client_id: dep.supernodes[f"client-{c.client_id}"] for c in clients})
            peak = {"rss": 0, "next": 0.0}

            def on_tick() -> None:
                now = time.perf_counter()
                if now >= peak["next"]:  # memory of every Flower process, every RSS_EVERY_S
                    peak["rss"] = max(peak["rss"], sup.rss_bytes())
                    peak["next"] = now + RSS_EVERY_S
                if tick is not None:
                    tick(live)

            status = dep.wait(run_id, timeout_s, tick=on_tick)
            run_wall_s = time.perf_counter() - t_submit
            server_log = dep.server_log(run_id)
            rss = max(peak["rss"], sup.rss_bytes())
            sampler.stop()
            sampler.dump(workdir / "logs" / "link-series.jsonl")
            messages = live.measures()
            cids = [c.client_id for c in clients]
            result = EmulationResult(
                run_id, status, list(clients), messages,
                bytes_up={cid: sampler.totals(str(cid), "up") for cid in cids},
                bytes_down={cid: sampler.totals(str(cid), "down") for cid in cids},
                startup_s=startup_s, run_wall_s=run_wall_s, dropped=sorted(set(dropper.dropped)),
                server_log=server_log, issues=server_log_issues(server_log), peak_rss_bytes=rss)
    except RunError as exc:
        # Messages name log files inside the work directory, which is about to go: point at the copies.
        msg = str(exc)
        if logs_to is not None:
            msg = msg.replace(str(workdir / "logs"), str(logs_to))
        raise RunError(msg) from None
    finally:
        if logs_to is not None:
            _copy_logs(workdir / "logs", Path(logs_to))
            if result is not None:
                result.logs_dir = Path(logs_to)
                (Path(logs_to) / "serverapp.log").write_text(result.server_log, encoding="utf-8")
        shutil.rmtree(workdir, ignore_errors=True)
    if result.status is not None and result.status.sub_status != "completed":
        raise RunError(f"the Flower run ended {result.status.status}:{result.status.sub_status} "
                       f"({result.status.details}). ServerApp log tail:\n{_tail(result.server_log)}")
    return result


def server_log_issues(server_log: str) -> list[str]:
    """Failures a ServerApp logs while Flower still calls the run "completed": halted SecAgg+ rounds,
    rounds with failed clients."""
    issues, rnd = [], "?"
    for line in server_log.splitlines():
        if (m := re.search(r"\[ROUND (\d+)\]", line)) is not None:
            rnd = m.group(1)
        elif "Secure aggregation halted" in line:
            issues.append(f"round {rnd}: SecAgg+ halted (too few clients survived to unmask the sum)")
        elif (m := re.search(r"aggregate_fit: received (\d+) results and (\d+) failures", line)) and int(m.group(2)):
            issues.append(f"round {rnd}: {m.group(2)} client(s) failed, {m.group(1)} result(s) aggregated")
        elif "Insufficient available nodes" in line:
            issues.append(f"round {rnd}: {line.split(':', 1)[-1].strip()}")
    return issues


def _measure(sampler: LedgerSampler, cid: int, span: MessageSpan) -> MessageMeasure:
    key = str(cid)
    down_to = span.t_received_s if span.t_received_s is not None else span.t_receiving_s
    down = sampler.transfer(key, "down", span.t_receiving_s - LOG_SLACK_S, down_to + LOG_SLACK_S,
                            extend_back_gap_s=HEADER_GAP_S)
    if span.t_sending_s is not None and span.t_sent_s is not None:
        up = sampler.transfer(key, "up", span.t_sending_s - LOG_SLACK_S, span.t_sent_s + LOG_SLACK_S)
    else:
        up = Transfer(0, None, None)
    return MessageMeasure(cid, span, down, up)


def check_app_dir(app_dir: Path) -> None:
    """ConfigError unless ``app_dir`` is a Flower app directory (pyproject.toml with [tool.flwr.app])."""
    py = app_dir / "pyproject.toml"
    if not py.is_file():
        raise ConfigError(f"{app_dir} has no pyproject.toml; pass a Flower app directory (one with "
                          f"[tool.flwr.app] in its pyproject.toml)")
    try:
        data = tomllib.loads(py.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{py}: not valid TOML ({exc})") from None
    if "app" not in data.get("tool", {}).get("flwr", {}):
        raise ConfigError(f"{py} has no [tool.flwr.app] section; is this a Flower app?")


def _copy_logs(src: Path, dst: Path) -> None:
    if not src.exists():
        return
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file():
            shutil.copy2(f, dst / f.name)


def _tail(text: str, n: int = 20) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(f"    {ln}" for ln in lines[-n:]) or "    (empty)"
