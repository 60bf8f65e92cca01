"""The emulate engine: Flower's Deployment Engine on real sockets, every SuperNode behind its own shaped link.

One SuperLink on loopback, the asyncio shaper with one route per client, one SuperNode per client
connecting through its route, one ``flwr run``. While the run goes, a sampler records each link's
byte counters; afterwards each message a SuperNode logged is cut out of those series, so every
client, round and stage gets measured bytes and transfer durations, and the rest of its time is split
into compute (reported by fedbw's own apps) and Flower's framework time (polling, process start-up).
Every process started here is stopped on success, failure, a child dying and Ctrl-C; the temporary
work directory is removed (logs are copied into the run directory first).

Two entry points: :func:`run_emulate` (``fedbw run --engine emulate``: fedbw's apps from a plan) and
:func:`emulate_app` (``fedbw emulate --app DIR``: any Flower app, unmodified).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedbw.engines.deploy.flower import FlowerDeployment, RunStatus
from fedbw.engines.deploy.ports import LOOPBACK
from fedbw.engines.deploy.process import Child, LogLine, Supervisor
from fedbw.engines.deploy.sampler import LedgerSampler, Transfer
from fedbw.engines.deploy.supernode_log import MessageSpan, is_receiving, message_group, parse_supernode_log
from fedbw.errors import ConfigError, RunError
from fedbw.results.records import ClientRoundRecord, RoundRecord, StageRecord

if TYPE_CHECKING:
    from fedbw.engines.base import Progress, RunResult
    from fedbw.plan import Plan
    from fedbw.results.records import RecordWriter

#: Flower 1.42's hard-coded intervals (seconds) that make up most of its framework time.
SUPERNODE_POLL_S = 3.0  #: SuperNode asks the SuperLink for a message when it had none
SERVERAPP_POLL_S = 3.0  #: ServerApp (legacy Grid.send_and_receive) asks for replies
SUPEREXEC_POLL_S = 1.0  #: SuperExec looks for work to start a ClientApp process (env-tunable)
REPLY_POLL_S = 0.5  #: SuperNode waits for its ClientApp's reply
#: Downlink: activity right before "Receiving" with no pause longer than this belongs to the message.
HEADER_GAP_S = 1.0
#: Slack around log stamps (pipe latency) when cutting a window out of the byte series.
LOG_SLACK_S = 0.05
#: How often the summed RSS of Flower's processes is sampled for the peak.
RSS_EVERY_S = 1.0
#: Stage names of one legacy SecAgg+ round, in order (one "train" message each).
SECAGG_STAGES = ("setup", "share_keys", "collect_masked_vectors", "unmask")


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
            mtype = is_receiving(text)
            if mtype != "train":
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
    _check_app_dir(app_dir)
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
                    peak["rss"] = max(peak["rss"], _group_rss_bytes(sup.children) or 0)
                    peak["next"] = now + RSS_EVERY_S
                if tick is not None:
                    tick(live)

            status = dep.wait(run_id, timeout_s, tick=on_tick)
            run_wall_s = time.perf_counter() - t_submit
            server_log = dep.server_log(run_id)
            rss = max(peak["rss"], _group_rss_bytes(sup.children) or 0)
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


def server_log_issues(server_log: str) -> list[str]:
    """Failures a ServerApp logs while Flower still calls the run "completed": halted SecAgg+ rounds,
    rounds with failed clients."""
    import re

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


def _check_app_dir(app_dir: Path) -> None:
    py = app_dir / "pyproject.toml"
    if not py.is_file():
        raise ConfigError(f"{app_dir} has no pyproject.toml; pass a Flower app directory (one with "
                          f"[tool.flwr.app] in its pyproject.toml)")
    import tomllib

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


def _group_rss_bytes(children: Sequence[Child]) -> int | None:
    """Resident memory of every process in the children's process groups, summed (Linux)."""
    pgids = {c.pid for c in children}
    total = 0
    proc = Path("/proc")
    if not proc.exists():  # pragma: no cover
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            rest = stat[stat.rfind(")") + 2:].split()
            if int(rest[2]) not in pgids:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            continue
    return total


# ----------------------------------------------------------------------------- records from spans


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


# ----------------------------------------------------------------------------------- plan → links


def link_spec_for(plan_client: Any, seed: int, up_trace: tuple = (), down_trace: tuple = (),
                  rate_factor: float = 1.0) -> Any:
    """The shaper link of one planned client: its payload rates, RTT and jitter (as the netmodel uses)."""
    from fedbw.shaper import LinkSpec

    link = plan_client.link
    return LinkSpec.from_rtt(link.up_payload_mbps * rate_factor, link.down_payload_mbps * rate_factor,
                             plan_client.rtt_ms, plan_client.jitter_ms, up_trace=up_trace,
                             down_trace=down_trace, seed=seed)


def clients_for_profile(n: int, profile: str, seed: int = 0) -> list[EmulatedClient]:
    """``n`` clients on one catalog link profile (``fedbw emulate --profile``)."""
    from fedbw import catalog
    from fedbw.catalog.links import TCP_ETHERNET_EFFICIENCY
    from fedbw.shaper import LinkSpec

    if n < 1:
        raise ConfigError(f"--clients must be at least 1, got {n}")
    p = catalog.get_link_profile(profile)
    return [EmulatedClient(i, p.name, LinkSpec.from_rtt(p.up_mbps * TCP_ETHERNET_EFFICIENCY,
                                                        p.down_mbps * TCP_ETHERNET_EFFICIENCY,
                                                        p.rtt_ms, p.jitter_ms, seed=seed + i))
            for i in range(n)]


# ------------------------------------------------------------------------------ fedbw's own apps

ENGINE = "emulate"
LOGS_DIR = "emulate-logs"
SUMMARY_FILE = "emulate.json"

_FEDBW_APP_PYPROJECT = """\
# Written by fedbw's emulate engine: Flower runs fedbw's own apps (installed in this environment).
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "fedbw-apps"
version = "1.0.0"
description = "fedbw's ServerApp and ClientApp, launched by fedbw run --engine emulate"
license = "Apache-2.0"
dependencies = []

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "fedbw"

[tool.flwr.app.components]
serverapp = "fedbw.fl.server_app:app"
clientapp = "fedbw.fl.client_app:app"

[tool.flwr.app.config]
{plan_key} = {plan_path}
"""


def write_fedbw_app(parent: Path, plan_path: Path) -> Path:
    """A Flower app directory whose components are fedbw's apps and whose run config names the plan."""
    import json

    from fedbw.fl.settings import PLAN_KEY

    app = parent / "fedbw-apps"
    app.mkdir(parents=True, exist_ok=True)
    (app / "pyproject.toml").write_text(
        _FEDBW_APP_PYPROJECT.format(plan_key=f'"{PLAN_KEY}"', plan_path=json.dumps(str(plan_path))), encoding="utf-8")
    (app / "README.md").write_text("fedbw's apps, as a Flower app directory (generated).\n", encoding="utf-8")
    return app


def _flap_trace(base_mbps: float, flaps: Sequence[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    steps: list[tuple[float, float]] = []
    for at_s, dur_s in sorted(flaps):
        if steps and at_s <= steps[-1][0]:
            raise ConfigError(f"faults.flaps for one client overlap (one starts at {at_s:g} s before the previous "
                              f"one ends); merge them into one longer flap")
        steps += [(at_s, 0.0), (at_s + dur_s, base_mbps)]
    return tuple(steps)


def clients_for_plan(plan: Any) -> list[EmulatedClient]:
    """One emulated client per planned client: its planned link, with the config's stragglers and flaps."""
    from fedbw.shaper import LinkSpec

    faults = plan.config.faults
    factor = {s.client: s.link_factor for s in faults.stragglers}
    out = []
    for pc in plan.clients:
        f = factor.get(pc.client_id, 1.0)
        up, down = pc.link.up_payload_mbps * f, pc.link.down_payload_mbps * f
        flaps = [fl for fl in faults.flaps if fl.client == pc.client_id]
        up_trace = _flap_trace(up, [(fl.at_s, fl.duration_s) for fl in flaps if fl.direction in ("both", "up")])
        down_trace = _flap_trace(down, [(fl.at_s, fl.duration_s) for fl in flaps if fl.direction in ("both", "down")])
        link = LinkSpec.from_rtt(up, down, pc.rtt_ms, pc.jitter_ms, up_trace=up_trace, down_trace=down_trace,
                                 seed=plan.config.seed * 100003 + pc.client_id)
        out.append(EmulatedClient(pc.client_id, pc.profile, link))
    return out


def drops_for_plan(plan: Any) -> list[DropFault]:
    order = {"fit": 0, **{s: i for i, s in enumerate(SECAGG_STAGES)}}
    return [DropFault(d.client, d.round, order[d.stage]) for d in plan.config.faults.drops]


class _RoundRecorder:
    """Tails the apps' event log; when a round ends, joins it with the links' measurements."""

    def __init__(self, plan: Any, run_id: str, events_path: Path, writer: Any, progress: Any,
                 dropped: Callable[[], Sequence[int]]) -> None:
        from fedbw.engines.sim_events import EventReader, RoundAssembler

        self.plan, self.run_id, self.writer, self.progress = plan, run_id, writer, progress
        self.reader, self.assembler = EventReader(events_path), RoundAssembler()
        self.dropped = dropped
        self.clients: list[ClientRoundRecord] = []
        self.rounds: list[RoundRecord] = []
        self.messages: list[Any] = []  #: MessageTimes of every finished round
        self.profile_of = {c.client_id: c.profile for c in plan.clients}

    def consume(self, measures: Callable[[], list[MessageMeasure]]) -> None:
        from fedbw.engines.deploy.attribution import match_round, message_times, round_records

        per_round = self.plan.config.clients.per_round
        for ev in self.reader.read_new():
            rnd = self.assembler.add(ev)
            if ev.get("event") == "message":
                r = ev["round"]
                self.progress(r, min(self.assembler.get(r).clients_done(), per_round - 1), per_round)
            if rnd is None:
                continue
            pairs = match_round(rnd.messages, measures(), rnd.round)
            times = []
            for ev_msg, meas in pairs:
                if meas is None:  # a message the SuperNode never logged (it was dropped first)
                    continue
                times.append(message_times(ev_msg, meas))
            clients, record = round_records(
                self.run_id, ENGINE, rnd.round, times, self.profile_of, rnd.clients or [], self.dropped(),
                loss=rnd.loss, accuracy=rnd.accuracy, epsilon=rnd.epsilon, wall_time_s=rnd.wall_time_s)
            extras = {m["client_id"]: m for m in rnd.messages if m.get("num_examples") is not None}
            for c in clients:
                if (e := extras.get(c.client_id)) is not None:
                    c.train_loss, c.num_examples = e.get("train_loss"), int(e["num_examples"])
            self.writer.write([*clients, record])
            self.clients += clients
            self.rounds.append(record)
            self.messages += [(rnd.round, t) for t in times]
            self.progress(rnd.round, per_round, per_round)


def run_emulate(plan: Plan, run_id: str, writer: RecordWriter | None = None,
                progress: Progress | None = None) -> RunResult:
    """Run ``plan`` with fedbw's apps on the Deployment Engine behind shaped links; records per round."""
    from fedbw.engines.base import NoProgress, RunResult
    from fedbw.fl.settings import EVENTS_FILE, write_plan_file
    from fedbw.fl.train import resolve_device
    from fedbw.results.rundir import write_run_metadata

    if writer is None:
        raise RunError("the emulate engine writes records into a run directory; pass a RecordWriter")
    progress = progress or NoProgress
    cfg = plan.config
    run_dir = writer.path.parent
    device = resolve_device(cfg.device)
    write_run_metadata(run_dir, cfg, device=device)
    plan_path = write_plan_file(run_dir, cfg, device)
    events_path = run_dir / EVENTS_FILE
    events_path.unlink(missing_ok=True)
    clients = clients_for_plan(plan)
    dropper_state: list[int] = []
    recorder = _RoundRecorder(plan, run_id, events_path, writer, progress, lambda: dropper_state)
    app_parent = Path(tempfile.mkdtemp(prefix="fedbw-app-"))
    failure: BaseException | None = None
    res: EmulationResult | None = None
    progress(1, 0, cfg.clients.per_round)
    try:
        app_dir = write_fedbw_app(app_parent, plan_path)

        def tick(live: Live) -> None:
            recorder.consume(live.measures)

        res = emulate_app(app_dir, clients, drops=drops_for_plan(plan), timeout_s=cfg.emulate.timeout_s,
                          logs_to=(run_dir / LOGS_DIR) if cfg.emulate.keep_logs else None, tick=tick,
                          env_extra={"FEDBW_PLAN": str(plan_path)})
        dropper_state[:] = res.dropped
        recorder.consume(lambda: res.messages)  # type: ignore[union-attr]
    except RunError as exc:
        failure = exc
    finally:
        shutil.rmtree(app_parent, ignore_errors=True)
    result = RunResult(run_dir=run_dir, clients=recorder.clients, rounds=recorder.rounds)
    if res is not None:
        _write_summary(run_dir / SUMMARY_FILE, res, recorder)
    halted = [i for i in (res.issues if res is not None else []) if "halted" in i]
    result.stopped_early = recorder.assembler.stopped_early  # privacy.dp.max_epsilon ended the run early
    short = len(recorder.rounds) < plan.rounds and not result.stopped_early
    if halted or failure is not None or recorder.assembler.error or short:
        why = ("; ".join(halted) or recorder.assembler.error
               or (str(failure) if failure else "the ServerApp ended early"))
        secagg = cfg.privacy.secagg
        hint = ""
        if secagg.enabled and (halted or cfg.faults.drops):
            hint = (f"\nSecAgg+ can unmask the sum only if at least reconstruction_threshold = "
                    f"{secagg.reconstruction_threshold} of each client's {secagg.num_shares} share holders survive; "
                    f"{len(cfg.faults.drops)} drop(s) were injected ({res.dropped if res else []} dropped). "
                    "Inject fewer drops, lower privacy.secagg.reconstruction_threshold or raise num_shares.")
        raise RunError(f"emulate stopped after {len(recorder.rounds)} of {plan.rounds} round(s): {why}{hint}\n"
                       "finished rounds are kept in records.jsonl")
    return result


def _write_summary(path: Path, res: EmulationResult, recorder: _RoundRecorder) -> None:
    """What the records do not hold: start-up, memory, link totals, every message's parts."""
    import json

    data = {
        "flower_run_id": res.flower_run_id, "startup_s": res.startup_s, "run_wall_s": res.run_wall_s,
        "peak_rss_bytes": res.peak_rss_bytes, "dropped": res.dropped,
        "link_bytes_up": {str(k): v for k, v in res.bytes_up.items()},
        "link_bytes_down": {str(k): v for k, v in res.bytes_down.items()},
        "messages": [{"round": r, "client_id": t.client_id, "stage": t.stage, "bytes_down": t.bytes_down,
                      "bytes_up": t.bytes_up, "flower_bytes_down": t.flower_bytes_down,
                      "flower_bytes_up": t.flower_bytes_up, "t_down_s": t.t_down_s, "t_up_s": t.t_up_s,
                      "t_compute_s": t.t_compute_s, "t_framework_s": t.t_framework_s, "total_s": t.total_s,
                      "parts": t.parts, "bulk": t.bulk, "error": t.error}
                     for r, t in recorder.messages],
    }
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------ bring your own Flower app


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
    import tomllib

    from fedbw.results.records import RecordWriter

    cfg: dict[str, Any] = {}
    for item in run_config:
        if "=" not in item:
            raise ConfigError(f"--run-config {item!r}: write key=value, e.g. --run-config num-server-rounds=3")
        k, v = item.split("=", 1)
        try:
            cfg[k.strip()] = tomllib.loads(f"v = {v}")["v"]
        except tomllib.TOMLDecodeError:
            cfg[k.strip()] = v
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


def render_app_run(console: Any, run: AppRun) -> None:
    """Per-client link totals and per-round times of a ``fedbw emulate --app`` run."""
    from rich.table import Table

    res = run.result
    t = Table(title="Per client (shaped links; bytes as carried on the wire, polling included)", title_justify="left")
    for col in ("client", "profile", "up", "down", "messages", "t_down", "t_up", "framework + app"):
        t.add_column(col, justify="right" if col not in ("profile",) else "left")
    for c in res.clients:
        msgs = res.for_client(c.client_id)
        done = [m for m in msgs if m.span.complete]
        fw = sum((m.span.app_s or 0.0) for m in done)
        t.add_row(str(c.client_id), c.profile, _fmt_bytes(res.bytes_up[c.client_id]),
                  _fmt_bytes(res.bytes_down[c.client_id]), str(len(done)),
                  f"{sum(m.down.duration_s for m in done):.2f} s", f"{sum(m.up.duration_s for m in done):.2f} s",
                  f"{fw:.2f} s")
    console.print(t)
    r = Table(title="Per round (wall clock)", title_justify="left")
    for col in ("round", "clients", "round time", "network (critical path)", "framework + app", "up total",
                "down total"):
        r.add_column(col, justify="right")
    for rec in run.rounds:
        r.add_row(str(rec.round), str(rec.num_clients), f"{rec.round_time_s:.2f} s", f"{rec.comm_time_s:.2f} s",
                  f"{rec.framework_time_s:.2f} s", _fmt_bytes(rec.bytes_up_total), _fmt_bytes(rec.bytes_down_total))
    console.print(r)
    starts = [m.span.startup_s for m in res.messages if m.span.startup_s is not None]
    if starts:
        console.print(f"ClientApp process start (SuperExec poll + process start-up), per message: "
                      f"median {sorted(starts)[len(starts) // 2]:.2f} s over {len(starts)} messages. "
                      f"Set-up {res.startup_s:.1f} s, run {res.run_wall_s:.1f} s, peak RSS of Flower's processes "
                      f"{_fmt_bytes(res.peak_rss_bytes or 0)}.")
    for issue in res.issues:
        console.print(f"[yellow]warning[/]: {issue}")
    if res.dropped:
        console.print(f"dropped (SuperNode killed): clients {res.dropped}")
    if run.out_dir is not None:
        console.print(f"records and logs: {run.out_dir}")


def _fmt_bytes(n: float) -> str:
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n:.0f} B"
