"""Any Flower app on a loopback Deployment-Engine federation whose every SuperNode sits behind its own
shaped link — the measurement under both ``fedbw run --engine emulate`` and ``fedbw emulate --app``.

One SuperLink on loopback, the asyncio shaper (a process of its own) with one route per client, one
SuperNode per client connecting through its route, one ``flwr run``. While the run goes, the shaper
samples each link's byte counters into its series file; each message a SuperNode logged is cut out
of those series, so every client, round and stage gets measured bytes and transfer durations.

Under time dilation by K (:mod:`fedbw.timewarp`) the links run K times slower, Flower's processes
start with the launcher that stretches its intervals, each device's processes are capped to 1/K of
a core (times its ``cpu_speed``) when the host allows cgroups, and every stamp is read back on the
emulated clock. Every process started here is stopped on success, failure, a child dying and
Ctrl-C; the temporary work directory is removed (logs are copied out first).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedbw.shaper.anchor import ANCHOR_ENV, anchor_traces_now, write_anchor_pids
from fedbw.engines.emulate.flower import RunStatus
from fedbw.engines.emulate.host import SERVER, SHAPER, HostSample, HostSampler
from fedbw.engines.emulate.hosts import Hosts, LoopbackHosts, Shapers
from fedbw.engines.emulate.server_log import server_log_issues
from fedbw.engines.emulate.supernode_log import MessageSpan, is_receiving, message_group, parse_supernode_log
from fedbw.engines.foreign_app import check_app_dir
from fedbw.errors import ConfigError, RunError
from fedbw.fl.settings import THREADS_ENV
from fedbw.processes import Child, LogLine, Supervisor
from fedbw.processes.cpu_cap import PERIOD_US, CpuCaps, CpuGroup, cgroup_root
from fedbw.shaper.series import LinkSeries, Transfer
from fedbw.timewarp import Dilation
from fedbw.timewarp.launcher import env_additions

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
    cpu_speed: float = 1.0  #: the device's speed in cores of this host (its CPU cap under dilation)


@dataclass(frozen=True)
class DropFault:
    """Kill client ``client``'s SuperNode (and its ClientApp) as it receives the ``stage_index``-th
    train message of round ``round`` — it never replies, as a phone that lost power."""

    client: int
    round: int
    stage_index: int = 0
    #: the client comes back (``clients.availability`` samples it again later): a fresh SuperNode of it is
    #: started once the old one is dead, and registers under a new node id, as a device that reconnects
    back: bool = False


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
    dilation: float = 1.0  #: every emulated second lasted this many real seconds; times are emulated
    cpu_capped: bool = False  #: each device's processes were capped to its share of a core
    cap_period_ms: int | None = None  #: the caps' accounting period (None: not capped)
    cpu_note: str | None = None  #: why devices were not capped under dilation
    host_samples: list[HostSample] = field(default_factory=list)
    host_cores: int = 1

    def for_client(self, cid: int) -> list[MessageMeasure]:
        return [m for m in self.messages if m.client_id == cid]


# --------------------------------------------------------------------------------- the emulation


class _Dropper:
    """Watches SuperNode logs and kills a client when its drop fault's message arrives."""

    def __init__(self, drops: Sequence[DropFault]) -> None:
        self.drops = {(d.client, d.round, d.stage_index) for d in drops}
        self.back = {(d.client, d.round, d.stage_index) for d in drops if d.back}
        self.counts: dict[tuple[int, str], int] = {}
        self.group: dict[int, str | None] = {}
        self.dropped: list[int] = []
        self._lock = threading.Lock()
        #: starts a fresh SuperNode of a client that comes back (set once the federation is up)
        self.restart: Callable[[int], None] | None = None

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
                back = (cid, rnd, k) in self.back
                if hit:
                    self.dropped.append(cid)
            if hit:
                child.kill()
                if back and self.restart is not None:
                    self.restart(cid)
        return on_line


class Live:
    """What a run has measured so far, for callers that turn rounds into records as they finish.

    Stamps are on the emulation's clock: the SuperNodes' log stamps and the shaper's series are
    mapped from real time when dilated.
    """

    def __init__(self, shaper: Shapers, supernodes: Mapping[int, Child], dilation: Dilation,
                 host: HostSampler) -> None:
        self.shaper = shaper
        #: each client's SuperNodes, in the order they ran (a client that came back has several)
        self.supernodes: dict[int, list[Child]] = {cid: [child] for cid, child in supernodes.items()}
        self.dilation = dilation
        self.host = host

    def came_back(self, cid: int, child: Child) -> None:
        """A fresh SuperNode of client ``cid`` (the old one was stopped as it dropped out)."""
        self.supernodes[cid] = [*self.supernodes[cid], child]

    def series(self) -> LinkSeries:
        return self.shaper.series()

    def spans(self, cid: int) -> list[MessageSpan]:
        lines = [ln for child in self.supernodes[cid] for ln in child.snapshot_lines()]
        if self.dilation.active:
            lines = [LogLine(self.dilation.emulated(ln.t_s), ln.text) for ln in lines]
        return parse_supernode_log(lines)

    def measures(self, client_ids: Sequence[int] | None = None, series: LinkSeries | None = None,
                 ) -> list[MessageMeasure]:
        series = self.series() if series is None else series
        out = []
        for cid in self.supernodes:
            if client_ids is None or cid in client_ids:
                out += [_measure(series, cid, span) for span in self.spans(cid)]
        return out


def emulate_app(app_dir: Path, clients: Sequence[EmulatedClient], *, run_config: Mapping[str, Any] | None = None,
                drops: Sequence[DropFault] = (), timeout_s: float | None = 1800.0,
                logs_to: Path | None = None, tick: Callable[[Live], None] | None = None,
                superlink_port: int = 0, sample_interval_s: float = 0.005,
                env_extra: Mapping[str, str] | None = None, shared_link: Any = None,
                dilation: float = 1.0, cap_cpu: bool = True, hosts: Hosts | None = None,
                tls: bool = False, supernode_auth: bool = False,
                cap_period_ms: int = PERIOD_US // 1000) -> EmulationResult:
    """Run the Flower app in ``app_dir`` on a loopback federation whose links are shaped per client.

    Returns what was measured; raises RunError (with the failing child's last log lines) if a
    process fails to start or dies, or the run fails. ``logs_to`` receives every log (SuperLink,
    SuperNodes, ServerApp, shaper ledger and series) before the work directory is removed.
    ``shared_link`` (a shaper LinkSpec) is the server's own link, shared by every client's flows.
    ``dilation`` K > 1 stretches time (module docstring); ``cap_cpu`` then caps each device (and the
    server) to its share of a core when cgroups allow, accounted over periods of ``cap_period_ms``.
    ``timeout_s`` counts emulated seconds.
    ``hosts`` (:class:`~fedbw.engines.emulate.hosts.Hosts`): where the processes run —
    :class:`~fedbw.engines.emulate.hosts.LoopbackHosts` by default, or
    :class:`~fedbw.engines.emulate.hosts.NetnsHosts`: the SuperLink and every SuperNode on network hosts of
    their own, a shaper on each client host, TLS (docs/multi-host.md). ``tls``: the loopback SuperLink
    serves TLS (a CA made for the run); ``supernode_auth``: every SuperNode authenticates with a key pair
    of its own, registered first (needs TLS; :mod:`.flower`). Keys and certificates stay in the work
    directory and never reach ``logs_to``.
    """
    app_dir = Path(app_dir).resolve()
    check_app_dir(app_dir)
    if not clients:
        raise ConfigError("emulate needs at least one client")
    if hosts is None:
        hosts = LoopbackHosts(tls=tls, supernode_auth=supernode_auth)
    elif supernode_auth:
        hosts = dataclasses.replace(hosts, supernode_auth=True)  # type: ignore[type-var]
    warp = Dilation.starting_now(dilation)
    workdir = Path(tempfile.mkdtemp(prefix="fedbw-emulate-"))
    dropper = _Dropper(drops)
    result: EmulationResult | None = None
    t0 = time.perf_counter()
    try:
        with contextlib.ExitStack() as stack:
            caps, groups, note = _cpu_groups(stack, clients, warp, cap_cpu, cap_period_ms * 1000)
            fed = hosts.open(stack, [c.client_id for c in clients], workdir,
                             server_link=None if shared_link is None else shared_link.dilated(warp))
            sup = stack.enter_context(Supervisor())  # entered after the hosts: stops before they go
            anchor_file = workdir / "shaper.pids"  # traced links start at the first round (fedbw.shaper.anchor)
            env = process_env({**(env_extra or {}), ANCHOR_ENV: str(anchor_file)}, warp, capped=caps is not None)
            dep = fed.deployment(sup, workdir, env)
            stack.callback(dep.close)
            sl_port = dep.start_superlink(superlink_port, cpu_group=groups.get(SERVER))
            shaper = fed.shapers(sup, workdir, {c.client_id: c.link.dilated(warp) for c in clients}, sl_port,
                                 env=dict(os.environ), interval_s=sample_interval_s, cpu_group=groups.get(SHAPER),
                                 dilation=warp)
            write_anchor_pids(anchor_file, shaper.pids)
            n = len(clients)
            for c in clients:
                node_cfg = {"partition-id": c.client_id, "num-partitions": n, **dict(c.node_config)}
                dep.start_supernode(f"client-{c.client_id}", shaper.ports[str(c.client_id)], node_cfg,
                                    on_line=dropper.hook(c.client_id), cpu_group=groups.get(c.client_id))
            dep.wait_supernodes_ready()
            startup_s = time.perf_counter() - t0
            t_submit = time.perf_counter()
            run_id = dep.submit(app_dir, run_config)
            anchor_traces_now(anchor_file)  # an app of its own has no first-round anchor: the submit is t = 0
            host = HostSampler(groups, warp)
            live = Live(shaper, {c.client_id: dep.supernodes[f"client-{c.client_id}"] for c in clients}, warp, host)

            def restart(cid: int) -> None:  # a client that dropped out comes back: a fresh SuperNode
                c = next(x for x in clients if x.client_id == cid)
                child = dep.start_supernode(f"client-{cid}", shaper.ports[str(cid)],
                                            {"partition-id": cid, "num-partitions": n, **dict(c.node_config)},
                                            on_line=dropper.hook(cid), cpu_group=groups.get(cid))
                live.came_back(cid, child)

            dropper.restart = restart
            peak = {"rss": 0, "next": 0.0}

            def on_tick() -> None:
                now = time.perf_counter()
                if now >= peak["next"]:  # memory of every Flower process, every RSS_EVERY_S
                    peak["rss"] = max(peak["rss"], sup.rss_bytes())
                    peak["next"] = now + RSS_EVERY_S
                host.maybe_sample()
                if tick is not None:
                    tick(live)

            status = dep.wait(run_id, None if timeout_s is None else warp.real_s(timeout_s), tick=on_tick)
            run_wall_s = time.perf_counter() - t_submit
            server_log = dep.server_log(run_id)
            rss = max(peak["rss"], sup.rss_bytes())
            host.maybe_sample()
            series = shaper.final_series()
            messages = live.measures(series=series)
            cids = [c.client_id for c in clients]
            result = EmulationResult(
                run_id, status, list(clients), messages,
                bytes_up={cid: series.totals(str(cid), "up") for cid in cids},
                bytes_down={cid: series.totals(str(cid), "down") for cid in cids},
                startup_s=startup_s, run_wall_s=run_wall_s, dropped=sorted(set(dropper.dropped)),
                server_log=server_log, issues=server_log_issues(server_log), peak_rss_bytes=rss,
                dilation=warp.factor, cpu_capped=caps is not None,
                cap_period_ms=cap_period_ms if caps is not None else None, cpu_note=note, host_samples=host.samples,
                host_cores=host.cores)
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


#: Cores of this host kept for the shaper and fedbw itself when dilation is chosen automatically.
RESERVED_CORES = 0.5
#: The server's cores in emulated time (SuperLink, its SuperExec, the ServerApp).
SERVER_CORES = 2.0


#: Under caps every device is about one core of this host: its compute libraries get one thread.
#: OpenMP's default (a thread per host core) would spin-wait inside a cap of 1/K of a core and burn the
#: quota it waits for (simulate trains with the threads Ray gives each client).
CAPPED_THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", THREADS_ENV: "1"}


def process_env(env_extra: Mapping[str, str] | None, warp: Dilation, *, capped: bool) -> dict[str, str]:
    """What Flower's processes get in their environment besides the host's: the caller's additions,
    the dilation's launcher, and one compute thread per device when devices are CPU-capped."""
    return {**(env_extra or {}), **env_additions(warp), **(CAPPED_THREADS if capped else {})}


def resolve_dilation(value: float | str, clients: int, cores: int | None = None) -> float:
    """A dilation setting (a number, or "auto") as the factor to run with."""
    return float(auto_dilation(clients, cores)) if value == "auto" else float(value)


def auto_dilation(clients: int, cores: int | None = None) -> int:
    """K for ``--dilation auto``: enough that every device gets a core and the server
    :data:`SERVER_CORES` in emulated time from this host's cores, less :data:`RESERVED_CORES` for the
    shaper and fedbw."""
    cores = cores or os.cpu_count() or 1
    return max(1, math.ceil((clients + SERVER_CORES) / max(0.5, cores - RESERVED_CORES)))


def _cpu_groups(stack: contextlib.ExitStack, clients: Sequence[EmulatedClient], warp: Dilation, cap_cpu: bool,
                period_us: int = PERIOD_US) -> tuple[CpuCaps | None, dict[int, CpuGroup], str | None]:
    if not (warp.active and cap_cpu):
        return None, {}, None
    root = cgroup_root()
    if isinstance(root, str):
        return None, {}, (f"devices not CPU-capped ({root}): their CPU work costs 1/{warp.factor:g} of what it "
                          "would on a device of their own")
    caps = stack.enter_context(CpuCaps(root))
    groups = {SERVER: caps.group("server", warp.cpu_cores(SERVER_CORES), period_us),
              SHAPER: caps.group("shaper", float(os.cpu_count() or 1), period_us)}
    for c in clients:
        groups[c.client_id] = caps.group(f"client-{c.client_id}", warp.cpu_cores(c.cpu_speed), period_us)
    return caps, groups, None


def _measure(series: LinkSeries, cid: int, span: MessageSpan) -> MessageMeasure:
    key = str(cid)
    down_to = span.t_received_s if span.t_received_s is not None else span.t_receiving_s
    down = series.transfer(key, "down", span.t_receiving_s - LOG_SLACK_S, down_to + LOG_SLACK_S,
                           extend_back_gap_s=HEADER_GAP_S)
    if span.t_sending_s is not None and span.t_sent_s is not None:
        up = series.transfer(key, "up", span.t_sending_s - LOG_SLACK_S, span.t_sent_s + LOG_SLACK_S)
    else:
        up = Transfer(0, None, None)
    return MessageMeasure(cid, span, down, up)


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
