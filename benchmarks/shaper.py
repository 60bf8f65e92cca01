"""Shaper accuracy and cost: receiver-measured goodput, 0.5 s windows, added latency, proxy CPU.

Usage: .venv/bin/python benchmarks/shaper.py [--quick] [--loop uvloop|asyncio] [--no-kernel]
       [--only 30x32,80x1] [--repeat N] [--baseline-src DIR] [--also-src LABEL=DIR ...] [--quantum-ms Q]
       [--also-quantum-ms Q1,Q2] [--out FILE]

The CPU targets (issue 15), the new shaper beside the last committed one, alternating, medians:
  git archive HEAD fedbw | tar -x -C /tmp/fedbw-shaper-base
  .venv/bin/python benchmarks/shaper.py --only 30x32,80x1 --no-kernel --repeat 3 \
      --baseline-src /tmp/fedbw-shaper-base --also-quantum-ms 5 --perf-counts \
      --out benchmarks/results/shaper-cpu.json
The grant quantum's trade (fewer, larger writes against 0.5 s window accuracy), side by side:
  ... --only 30x32,80x1 --no-kernel --repeat 3 --also-quantum-ms 5,10 --perf-counts --out /tmp/shaper-quanta.json

Three processes per configuration, so the proxy's CPU can be read from /proc on its own:
  recv   the upstream: counts payload bytes per client in 0.5 s bins at the moment it reads them
         (receiver side, never the sender's view), and timestamps latency probes on arrival;
  proxy  the shaper as emulate runs it (`python -m fedbw.shaper.service`, its link-series sampler on)
         with one route per client (+ one probe client);
  send   per client several connections writing as fast as flow control allows, plus a probe that
         sends a 64-byte timestamped message every 20 ms through its own link (one-way latency:
         CLOCK_MONOTONIC is shared by all processes of the host), and the same probe sent directly
         to the receiver as the no-proxy baseline.
The kernel reference runs the same sender and receiver in two network namespaces joined by a veth
pair, shaped by tc htb (one class per client, rate = ceil = payload rate × 1514/1448 frames), created
and deleted by this script (names start with `fedbwbench`); skipped with a line saying why when not
root or tc is missing. Prints a fixed-column table and writes benchmarks/results/shaper.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import platform
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fedbw.processes import Child, Supervisor  # noqa: E402
from fedbw.shaper.service import parse_ready  # noqa: E402

#: Output of the benchmark's role processes (one log each), for a look after a failed run.
LOG_DIR = Path(tempfile.gettempdir()) / "fedbw-bench-shaper"

WINDOW_S = 0.5
WARMUP_S = 1.0
CONNS_PER_CLIENT = 4
PROBE_PERIOD_S = 0.02
PROBE_BYTES = 64
PROBE_LATENCY_MS = 10.0
LOAD_LATENCY_MS = 10.0  # one-way latency on the loaded links too, so the delay stage is exercised
NS_A, NS_B, VETH_A, VETH_B = "fedbwbench-a", "fedbwbench-b", "fedbwbench-va", "fedbwbench-vb"
IP_A, IP_B = "10.231.0.1", "10.231.0.2"
FRAME_PER_PAYLOAD = 1514 / 1448
HDR = struct.Struct("!cch")  # b"F", kind (B bulk, P probe via proxy, D probe direct), client index
BLOCK = b"\0" * 65536


def _loop(kind: str) -> asyncio.AbstractEventLoop:
    from fedbw.shaper import new_event_loop

    return new_event_loop(use_uvloop=kind == "uvloop")


def _sleep_until(t_s: float) -> None:
    while (left := t_s - time.perf_counter()) > 0:
        time.sleep(min(left, 0.05))


# ---------------------------------------------------------------------------------------------
# role: recv
# ---------------------------------------------------------------------------------------------
class _RecvProto(asyncio.Protocol):
    def __init__(self, state: dict[str, Any]) -> None:
        self.s = state
        self.head = b""
        self.kind = b""
        self.client = -1
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if self.client < 0:
            self.head += data
            if len(self.head) < HDR.size:
                return
            _, self.kind, self.client = HDR.unpack(self.head[: HDR.size])
            data = self.head[HDR.size:]
            if not data:
                return
        if self.kind == b"B":
            k = int((now - self.s["t0"]) / WINDOW_S)
            bins = self.s["bins"][self.client]
            if 0 <= k < len(bins):
                bins[k] += len(data)
            return
        self.buf += data
        while len(self.buf) >= PROBE_BYTES:
            (t_sent,) = struct.unpack_from("!d", self.buf)
            self.buf = self.buf[PROBE_BYTES:]
            if t_sent >= self.s["t0"] + WARMUP_S:
                self.s["probe_direct" if self.kind == b"D" else "probe"].append(now - t_sent)


def role_recv(args: argparse.Namespace) -> None:
    loop = _loop("uvloop")
    n_bins = int((args.duration + 1.0) / WINDOW_S)
    state: dict[str, Any] = {"t0": args.t0, "bins": [[0] * n_bins for _ in range(args.clients)],
                             "probe": [], "probe_direct": []}

    async def main() -> None:
        servers = []
        for i in range(args.ports):
            port = args.port_base + i if args.port_base else 0
            servers.append(await loop.create_server(lambda: _RecvProto(state), args.host, port))
        ports = [s.sockets[0].getsockname()[1] for s in servers]
        print("READY", json.dumps(ports), flush=True)
        await asyncio.sleep(max(0.0, args.t0 + args.duration + 0.4 - time.perf_counter()))
        for s in servers:
            s.close()

    loop.run_until_complete(main())
    print("RESULT", json.dumps(state), flush=True)


# ---------------------------------------------------------------------------------------------
# role: send
# ---------------------------------------------------------------------------------------------
class _Blaster(asyncio.Protocol):
    def __init__(self, client: int) -> None:
        self.client = client
        self.paused = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.set_write_buffer_limits(high=256 * 1024)  # type: ignore[attr-defined]
        transport.write(HDR.pack(b"F", b"B", self.client))  # type: ignore[attr-defined]
        self.pump()

    def pump(self) -> None:
        tr = self.transport
        while tr is not None and not self.paused and not tr.is_closing():
            tr.write(BLOCK)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self.pump()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


class _Quiet(asyncio.Protocol):
    def connection_lost(self, exc: Exception | None) -> None:
        pass


def role_send(args: argparse.Namespace) -> None:
    loop = _loop("uvloop")
    targets = json.loads(args.targets)  # [[host, port], ...] one per client
    probe = json.loads(args.probe) if args.probe else None  # {"proxy": [h, p], "direct": [h, p]}

    async def probe_loop(host: str, port: int, kind: bytes) -> None:
        tr, _ = await loop.create_connection(_Quiet, host, port)
        tr.write(HDR.pack(b"F", kind, 0))
        pad = b"\0" * (PROBE_BYTES - 8)
        rng = random.Random(kind)
        k = 0
        while time.perf_counter() < args.t0 + args.duration:
            tr.write(struct.pack("!d", time.perf_counter()) + pad)
            k += 1
            # a random offset within 1 ms: the event loops time in whole ms, and a probe locked to one
            # phase of that grid would measure that phase's error instead of the typical one
            t_next = args.t0 + k * PROBE_PERIOD_S + rng.uniform(0.0, 0.001)
            await asyncio.sleep(max(0.0, t_next - time.perf_counter()))
        tr.close()

    async def main() -> None:
        await asyncio.sleep(max(0.0, args.t0 - time.perf_counter()))
        transports = []
        for i, (host, port) in enumerate(targets):
            for _ in range(args.conns):
                tr, _ = await loop.create_connection(lambda i=i: _Blaster(i), host, port)
                transports.append(tr)
        probes = []
        if probe:
            probes.append(loop.create_task(probe_loop(*probe["proxy"], b"P")))
            probes.append(loop.create_task(probe_loop(*probe["direct"], b"D")))
        await asyncio.sleep(max(0.0, args.t0 + args.duration + 0.2 - time.perf_counter()))
        for tr in transports:
            tr.abort()
        await asyncio.gather(*probes, return_exceptions=True)
        await asyncio.sleep(0.05)

    loop.run_until_complete(main())


# ---------------------------------------------------------------------------------------------
# orchestration
# ---------------------------------------------------------------------------------------------
TRAFFIC_NICE = 0
#: Seconds the three processes of a row get to start before traffic begins (--setup-s).
SETUP_S = 3.0


def _spawn(sup: Supervisor, role_args: list[str], netns: str | None = None) -> Child:
    """One role of the benchmark as a supervised child (stopped with everything else on exit or Ctrl-C)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *role_args]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    if TRAFFIC_NICE and role_args[1] in ("send", "recv"):
        cmd = ["nice", "-n", str(TRAFFIC_NICE), *cmd]
    name = f"{role_args[1]}-{len(sup.children)}"
    return sup.start(name, cmd, {**os.environ, "PYTHONPATH": str(ROOT)}, LOG_DIR / f"{name}.log", stamp=False)


def _spawn_shaper(sup: Supervisor, up_port: int, routes: list[dict[str, Any]], loop_kind: str,
                  quantum_s: float | None, src: Path = ROOT) -> Child:
    """The shaper as emulate runs it: ``python -m fedbw.shaper.service`` with its link-series sampler on.

    ``src``: the tree whose ``fedbw`` the shaper process imports (``--baseline-src``: an older shaper
    measured side by side with this one)."""
    from fedbw.shaper import ClientRoute, LinkSpec
    from fedbw.shaper.service import write_spec

    LOG_DIR.mkdir(parents=True, exist_ok=True)
    n = len(sup.children)
    spec = write_spec(LOG_DIR / f"proxy-{n}-spec.json",
                      [ClientRoute(r["id"], "127.0.0.1", 0, "127.0.0.1", up_port, LinkSpec(**r["link"])) for r in routes],
                      series=LOG_DIR / f"proxy-{n}-series.jsonl", quantum_s=quantum_s,
                      use_uvloop=loop_kind == "uvloop")
    # cwd = the tree too: ``python -m`` puts the working directory ahead of PYTHONPATH on sys.path, so
    # from this checkout's root every "other" tree would import this checkout's fedbw
    return sup.start(f"proxy-{n}", [sys.executable, "-m", "fedbw.shaper.service", str(spec)],
                     {**os.environ, "PYTHONPATH": str(src)}, LOG_DIR / f"proxy-{n}.log", stamp=False, cwd=src)


def _ready(child: Child) -> Any:
    line = child.wait_for_line("READY", 30.0)
    return json.loads(line.text.split(" ", 1)[1])


def _result(child: Child) -> dict[str, Any]:
    child.wait(60.0)
    for line in child.snapshot_lines():
        if line.text.startswith("RESULT"):
            return json.loads(line.text.split(" ", 1)[1])
    raise RuntimeError("receiver gave no result")


def _cpu_user_sys_s(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process so far (from /proc: children of the benchmark only)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _pct(sorted_vals: list[float], q: float) -> float:
    if not sorted_vals:
        return float("nan")
    return sorted_vals[min(len(sorted_vals) - 1, int(q * len(sorted_vals)))]


def _analyze(result: dict[str, Any], rate_mbps: float, duration_s: float) -> dict[str, Any]:
    target_window = rate_mbps * 1e6 / 8 * WINDOW_S
    first, last = int(WARMUP_S / WINDOW_S), int(duration_s / WINDOW_S)  # windows [first, last)
    longrun, windows = [], []
    for bins in result["bins"]:
        used = bins[first:last]
        longrun.append(100.0 * sum(used) / (target_window * len(used)))
        windows.extend(100.0 * b / target_window for b in used)
    longrun.sort()
    windows.sort()
    out: dict[str, Any] = {
        "goodput_pct_median": statistics.median(longrun),
        "goodput_pct_min": longrun[0],
        "goodput_pct_max": longrun[-1],
        "window_pct_min": windows[0],
        "window_pct_max": windows[-1],
        "window_pct_p1": _pct(windows, 0.01),
        "window_pct_p99": _pct(windows, 0.99),
        "windows": len(windows),
    }
    if result.get("probe"):
        expected_s = PROBE_LATENCY_MS / 1e3 + PROBE_BYTES * 8 / (rate_mbps * 1e6)
        err = sorted((d - expected_s) * 1e3 for d in result["probe"])
        direct = sorted(d * 1e3 for d in result["probe_direct"])
        out.update({
            "latency_err_ms_p50": _pct(err, 0.5),
            "latency_err_ms_p99": _pct(err, 0.99),
            "latency_err_ms_p1": _pct(err, 0.01),
            "latency_samples": len(err),
            "direct_one_way_ms_p50": _pct(direct, 0.5),
            "direct_one_way_ms_p99": _pct(direct, 0.99),
        })
    return out


def run_proxy(rate: float, clients: int, duration: float, loop_kind: str,
              quantum_s: float | None = None, src: Path = ROOT) -> dict[str, Any]:
    with Supervisor() as sup:
        t_setup = time.perf_counter()
        t0_guess = t_setup + SETUP_S
        recv = _spawn(sup, ["--role", "recv", "--host", "127.0.0.1", "--ports", "1", "--clients", str(clients),
                            "--t0", repr(t0_guess), "--duration", repr(duration)])
        (up_port,) = _ready(recv)
        link = {"up_mbps": rate, "down_mbps": 1000.0, "latency_up_ms": LOAD_LATENCY_MS}
        routes = [{"id": f"c{i:02d}", "link": link} for i in range(clients)]
        routes.append({"id": "probe", "link": {"up_mbps": rate, "down_mbps": 1000.0,
                                                "latency_up_ms": PROBE_LATENCY_MS}})
        proxy = _spawn_shaper(sup, up_port, routes, loop_kind, quantum_s, src)
        ports = parse_ready(proxy.wait_for_line("READY {", 30.0).text)
        targets = [["127.0.0.1", ports[f"c{i:02d}"]] for i in range(clients)]
        probe = {"proxy": ["127.0.0.1", ports["probe"]], "direct": ["127.0.0.1", up_port]}
        if time.perf_counter() > t0_guess - 0.3:
            raise RuntimeError(f"set-up took longer than {SETUP_S - 0.3:g} s; the machine is overloaded "
                               "(raise --setup-s)")
        send = _spawn(sup, ["--role", "send", "--targets", json.dumps(targets), "--conns", str(CONNS_PER_CLIENT),
                            "--probe", json.dumps(probe), "--t0", repr(t0_guess), "--duration", repr(duration)])
        _sleep_until(t0_guess + WARMUP_S)
        procs = (proxy, send, recv)
        counting = _start_counts(proxy.pid, duration - WARMUP_S) if PERF_COUNTS else None
        cpu0, w0 = [_cpu_user_sys_s(p.pid) for p in procs], time.perf_counter()
        _sleep_until(t0_guess + duration)
        cpu1, w1 = [_cpu_user_sys_s(p.pid) for p in procs], time.perf_counter()
        counts = _finish_counts(counting, duration - WARMUP_S) if counting else None
        send.wait(30.0)
        result = _result(recv)
    out = _analyze(result, rate, duration)
    for key, a, b in zip(("cpu_pct_core", "cpu_send_pct_core", "cpu_recv_pct_core"), cpu0, cpu1, strict=True):
        out[key] = 100.0 * (sum(b) - sum(a)) / (w1 - w0)
    # the proxy's split: system time is mostly loopback sends and receives (the peer's TCP work runs in
    # the sender's system call), user time the interpreter
    out["cpu_user_pct_core"] = 100.0 * (cpu1[0][0] - cpu0[0][0]) / (w1 - w0)
    out["cpu_sys_pct_core"] = 100.0 * (cpu1[0][1] - cpu0[0][1]) / (w1 - w0)
    if counts is not None:
        out["proxy_events_per_s"] = counts
    return out


#: --perf-counts: what the proxy process did per second, counted by the kernel (`perf stat` on
#: software events and syscall tracepoints). Counts, unlike CPU time, barely move when other jobs
#: thrash the caches or starve the proxy: the figure to compare two shapers with on a busy host.
PERF_COUNTS = False
PERF_EVENTS = {"context-switches": "context_switches", "raw_syscalls:sys_enter": "syscalls",
               "syscalls:sys_enter_epoll_wait": "epoll_wait", "syscalls:sys_enter_epoll_pwait": "epoll_pwait",
               "syscalls:sys_enter_epoll_ctl": "epoll_ctl", "syscalls:sys_enter_read": "read",
               "syscalls:sys_enter_recvfrom": "recvfrom", "syscalls:sys_enter_write": "write",
               "syscalls:sys_enter_writev": "writev", "syscalls:sys_enter_sendto": "sendto"}


def _start_counts(pid: int, seconds: float) -> tuple[subprocess.Popen[bytes], Path]:
    out = LOG_DIR / f"perf-{pid}.csv"
    cmd = ["perf", "stat", "-x,", "-o", str(out), "-p", str(pid), "-e", ",".join(PERF_EVENTS), "--",
           "sleep", f"{seconds:.3f}"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), out


def _finish_counts(counting: tuple[subprocess.Popen[bytes], Path], seconds: float) -> dict[str, float] | None:
    proc, path = counting
    try:
        proc.wait(timeout=10.0)
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.wait()
        return None
    counts: dict[str, float] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        cells = line.split(",")
        if len(cells) > 2 and cells[2] in PERF_EVENTS and cells[0].strip().isdigit():
            counts[PERF_EVENTS[cells[2]]] = int(cells[0]) / seconds
    return counts or None


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def _ns_cleanup() -> None:
    for ns in (NS_A, NS_B):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def kernel_unavailable() -> str | None:
    """Why the tc reference cannot run here, or None."""
    from fedbw.netns import unavailable

    return unavailable()


def run_kernel(rate: float, clients: int, duration: float) -> dict[str, Any]:
    _ns_cleanup()
    stack = contextlib.ExitStack()
    try:
        _sh("ip", "netns", "add", NS_A)
        _sh("ip", "netns", "add", NS_B)
        _sh("ip", "link", "add", VETH_A, "type", "veth", "peer", "name", VETH_B)
        _sh("ip", "link", "set", VETH_A, "netns", NS_A)
        _sh("ip", "link", "set", VETH_B, "netns", NS_B)
        for ns, dev, ip in ((NS_A, VETH_A, IP_A), (NS_B, VETH_B, IP_B)):
            _sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
            _sh("ip", "-n", ns, "link", "set", dev, "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
        base = 20000
        frame_bit = int(rate * 1e6 * FRAME_PER_PAYLOAD)
        _sh("ip", "netns", "exec", NS_A, "tc", "qdisc", "add", "dev", VETH_A, "root", "handle", "1:", "htb")
        for i in range(clients):
            cls = f"1:{10 + i:x}"
            _sh("ip", "netns", "exec", NS_A, "tc", "class", "add", "dev", VETH_A, "parent", "1:", "classid", cls,
                "htb", "rate", f"{frame_bit}bit", "ceil", f"{frame_bit}bit")
            _sh("ip", "netns", "exec", NS_A, "tc", "filter", "add", "dev", VETH_A, "parent", "1:", "protocol", "ip",
                "prio", "1", "u32", "match", "ip", "dport", str(base + i), "0xffff", "flowid", cls)
        t0 = time.perf_counter() + 2.5
        sup = stack.enter_context(Supervisor())
        recv = _spawn(sup, ["--role", "recv", "--host", IP_B, "--ports", str(clients), "--port-base", str(base),
                            "--clients", str(clients), "--t0", repr(t0), "--duration", repr(duration)], netns=NS_B)
        _ready(recv)
        targets = [[IP_B, base + i] for i in range(clients)]
        send = _spawn(sup, ["--role", "send", "--targets", json.dumps(targets), "--conns", str(CONNS_PER_CLIENT),
                            "--t0", repr(t0), "--duration", repr(duration)], netns=NS_A)
        send.wait(duration + 30)
        result = _result(recv)
    finally:
        stack.close()  # the supervisor stops both roles before the namespaces go
        _ns_cleanup()
    return _analyze(result, rate, duration)


#: (record key, column header with unit, decimals or None for text/integers)
COLUMNS = [
    ("mode", "mode", None),
    ("rate", "rate_Mbps", None),
    ("clients", "clients", None),
    ("conns", "conns", None),
    ("goodput_pct_median", "goodput_%", 2),
    ("goodput_pct_min", "gp_min_%", 2),
    ("goodput_pct_max", "gp_max_%", 2),
    ("window_pct_min", "win_min_%", 2),
    ("window_pct_max", "win_max_%", 2),
    ("latency_err_ms_p50", "lat_p50_ms", 3),
    ("latency_err_ms_p99", "lat_p99_ms", 3),
    ("direct_one_way_ms_p99", "direct_p99_ms", 3),
    ("cpu_pct_core", "cpu_%core", 1),
]


def _width(head: str) -> int:
    return max(len(head), 7)


def _header() -> str:
    return "  ".join(f"{head:>{_width(head)}}" for _, head, _ in COLUMNS)


def _fmt_row(rec: dict[str, Any]) -> str:
    cells = []
    for key, head, decimals in COLUMNS:
        val, w = rec.get(key), _width(head)
        if val is None:
            cells.append(f"{'-':>{w}}")
        elif decimals is None:
            cells.append(f"{val:>{w}}")
        else:
            cells.append(f"{val:>{w}.{decimals}f}")
    return "  ".join(cells)


def _median_of(rows: list[dict[str, Any]], key: str) -> float | None:
    """Median of ``key`` over the rows that have it (older result files lack the user/system split)."""
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def _cpu_medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (tree, rate, clients): median proxy CPU and goodput over the repeats (the figures to quote)."""
    groups: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for r in rows:
        if r["mode"] == "proxy" and "error" not in r:
            groups.setdefault((r.get("shaper_tree", "current"), r["rate"], r["clients"]), []).append(r)
    return [{"shaper_tree": tree, "rate": rate, "clients": n, "trials": len(rs),
             "cpu_pct_core_median": statistics.median(r["cpu_pct_core"] for r in rs),
             "cpu_pct_core_all": [round(r["cpu_pct_core"], 2) for r in rs],
             # a host too busy to drive the links fully moves fewer bytes: CPU per byte at the full rate
             "cpu_pct_core_per_full_rate_median": statistics.median(
                 r["cpu_pct_core"] * 100.0 / r["goodput_pct_median"] for r in rs),
             "cpu_user_pct_core_median": _median_of(rs, "cpu_user_pct_core"),
             "cpu_sys_pct_core_median": _median_of(rs, "cpu_sys_pct_core"),
             "events_per_s_median": {k: statistics.median(r["proxy_events_per_s"][k] for r in rs
                                                          if k in (r.get("proxy_events_per_s") or {}))
                                     for k in sorted({k for r in rs for k in (r.get("proxy_events_per_s") or {})})},
             "goodput_pct_median": statistics.median(r["goodput_pct_median"] for r in rs),
             "window_pct_min": min(r["window_pct_min"] for r in rs),
             "window_pct_max": max(r["window_pct_max"] for r in rs),
             "loadavg_1m_median": statistics.median(r["loadavg_1m"] for r in rs)}
            for (tree, rate, n), rs in sorted(groups.items())]


def _quanta(text: str) -> list[float]:
    """``--also-quantum-ms`` as numbers; a bad item ends the benchmark with one line."""
    out = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        try:
            q_ms = float(item)
        except ValueError:
            raise SystemExit(f"--also-quantum-ms: {item!r} is not a number of ms") from None
        if not 0 < q_ms <= 1000:
            raise SystemExit(f"--also-quantum-ms: {item!r} must be in (0, 1000] ms")
        out.append(q_ms)
    return out


def machine() -> dict[str, Any]:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import uvloop

        uv = uvloop.__version__
    except ImportError:
        uv = None
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version(),
            "uvloop": uv, "loadavg_start": os.getloadavg()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--role", choices=["recv", "send"])
    ap.add_argument("--quick", action="store_true", help="3 configurations, 5 s each, one kernel row (≤ 40 s)")
    ap.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop", help="proxy event loop")
    ap.add_argument("--no-kernel", action="store_true", help="skip the tc htb reference")
    ap.add_argument("--quantum-ms", type=float, default=None, help="proxy grant quantum (default: the shaper's)")
    ap.add_argument("--traffic-nice", type=int, default=0,
                    help="niceness of the sender and receiver processes (the emulate engine runs Flower at +5)")
    ap.add_argument("--only", default=None, help="comma list of RATExCLIENTS rows to run, e.g. 30x32,80x1")
    ap.add_argument("--duration", type=float, default=None, help="seconds of traffic per configuration")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "shaper.json"))
    ap.add_argument("--baseline-src", default=None,
                    help="a tree with another fedbw/shaper (e.g. `git worktree add /tmp/base HEAD`): each proxy row "
                         "runs with it and with this tree, alternately (side by side in one run)")
    ap.add_argument("--also-src", action="append", default=[], metavar="LABEL=DIR",
                    help="one more tree to run side by side under its own label (repeatable), e.g. "
                         "bigbuf=/tmp/fedbw-bigbuf: a candidate change beside this tree and the baseline")
    ap.add_argument("--setup-s", type=float, default=3.0, help="start-up time of a row's processes "
                    "before traffic (raise it on a busy host)")
    ap.add_argument("--perf-counts", action="store_true",
                    help="count the proxy's system calls and context switches per second with `perf stat` "
                         "(needs perf and tracepoints; a figure a busy host barely moves)")
    ap.add_argument("--also-quantum-ms", default="",
                    help="comma list of grant quanta (ms) to run this tree with as well, side by side, e.g. 10: "
                         "CPU against window accuracy in one run")
    ap.add_argument("--repeat", type=int, default=1, help="run each proxy row this many times (medians in the JSON)")
    # role arguments
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--ports", type=int, default=1)
    ap.add_argument("--port-base", type=int, default=0)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--conns", type=int, default=CONNS_PER_CLIENT)
    ap.add_argument("--t0", type=float, default=0.0)
    ap.add_argument("--targets", default="[]")
    ap.add_argument("--probe", default="")
    args = ap.parse_args()
    if args.role == "recv":
        role_recv(args)
        return 0
    if args.role == "send":
        role_send(args)
        return 0

    if args.quick:
        configs = [(30, 1), (80, 1), (30, 32)]
        kernel_configs = [(30, 8)]
        duration = args.duration or 5.0
        k_duration = 4.0
    else:
        configs = [(r, n) for n in (1, 8, 32) for r in (30, 50, 80)]
        kernel_configs = configs
        duration = args.duration or 10.0
        k_duration = 6.0
    if args.only:
        configs = [tuple(int(x) for x in item.split("x")) for item in args.only.split(",")]
        kernel_configs = [c for c in kernel_configs if c in configs]
    global TRAFFIC_NICE, SETUP_S, PERF_COUNTS
    TRAFFIC_NICE = args.traffic_nice
    PERF_COUNTS = args.perf_counts
    if PERF_COUNTS and shutil.which("perf") is None:
        print("benchmarks/shaper.py: --perf-counts needs `perf` (linux-perf) on PATH", file=sys.stderr)
        return 2
    SETUP_S = args.setup_s
    also_quanta = _quanta(args.also_quantum_ms)  # a bad list ends the run before any row
    also_src = []
    for item in args.also_src:
        label, sep, where = item.partition("=")
        if not sep or not label or not (Path(where) / "fedbw" / "shaper").is_dir():
            print(f"benchmarks/shaper.py: --also-src wants LABEL=DIR with DIR/fedbw/shaper, got {item!r}",
                  file=sys.stderr)
            return 2
        also_src.append((label, Path(where).resolve()))
    info = machine()
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    print(f"# fedbw shaper benchmark  {started}  {info['cpu']}  {info['cores']} cores  kernel {info['kernel']}  "
          f"python {info['python']}  proxy loop {args.loop}  load {info['loadavg_start'][0]:.1f}"
          + (f"  quantum {args.quantum_ms:g} ms" if args.quantum_ms else "")
          + (f"  sender/receiver nice {args.traffic_nice}" if args.traffic_nice else ""))
    print(f"# {CONNS_PER_CLIENT} connections per client, {duration:g} s per row (kernel rows {k_duration:g} s), "
          f"windows {WINDOW_S} s after the first {WARMUP_S:g} s; % = receiver-measured payload / target")
    print(f"# lat_*: one-way error of a 64 B probe every {PROBE_PERIOD_S * 1e3:g} ms through its own "
          f"{PROBE_LATENCY_MS:g} ms link beside the load; direct_p99: the same probe sent straight to the "
          "receiver (machine noise); cpu_%core: proxy process, % of one core")
    print(_header())
    rows: list[dict[str, Any]] = []
    # the shapers measured side by side: (label, tree, quantum in ms or None for the tree's default)
    trees: list[tuple[str, Path, float | None]] = [("current", ROOT, args.quantum_ms)]
    if args.baseline_src:
        trees.append(("baseline", Path(args.baseline_src).resolve(), args.quantum_ms))
    for q_ms in also_quanta:
        trees.append((f"current-q{q_ms:g}ms", ROOT, q_ms))
    trees += [(label, where, args.quantum_ms) for label, where in also_src]
    for rate, n in configs:
        for i in range(args.repeat):
            for tree, src, q_ms in (trees if i % 2 == 0 else trees[::-1]):  # alternate who goes first
                rec = {"mode": "proxy", "rate": rate, "clients": n, "conns": CONNS_PER_CLIENT, "loop": args.loop,
                       "duration_s": duration, "quantum_ms": q_ms, "shaper_tree": tree, "trial": i,
                       "loadavg_1m": os.getloadavg()[0]}
                try:
                    rec.update(run_proxy(rate, n, duration, args.loop, q_ms / 1e3 if q_ms else None, src))
                    if rec["goodput_pct_median"] <= 0.0:  # CPU per byte of nothing: not a measurement
                        rec["error"] = "no payload reached the receiver (the host starved the row; rerun it)"
                except Exception as exc:  # noqa: BLE001 - report the row, keep going
                    rec["error"] = f"{exc.__class__.__name__}: {exc}"
                rows.append(rec)
                print(_fmt_row(rec) + f"  {tree}" + (f"  ERROR {rec['error']}" if "error" in rec else ""), flush=True)
    skip = "--no-kernel given" if args.no_kernel else kernel_unavailable()
    if skip:
        print(f"# kernel reference skipped: {skip}")
    else:
        for rate, n in kernel_configs:
            rec = {"mode": "tc-htb", "rate": rate, "clients": n, "conns": CONNS_PER_CLIENT, "duration_s": k_duration}
            try:
                rec.update(run_kernel(rate, n, k_duration))
            except subprocess.CalledProcessError as exc:
                rec["error"] = f"{' '.join(exc.cmd)}: {exc.stderr.strip()}"
            except Exception as exc:  # noqa: BLE001
                rec["error"] = f"{exc.__class__.__name__}: {exc}"
            rows.append(rec)
            print(_fmt_row(rec) + (f"  ERROR {rec['error']}" if "error" in rec else ""), flush=True)
            if "error" in rec and "netns" in rec["error"]:
                print("# kernel reference stopped: namespaces unavailable")
                break
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"started": started, "machine": info, "quick": args.quick, "traffic_nice": args.traffic_nice,
           "loadavg_end": os.getloadavg(), "repeat": args.repeat, "medians": _cpu_medians(rows), "rows": rows}
    from fedbw.files.atomic import write_json_atomic

    write_json_atomic(out, doc, indent=1)
    print(f"# wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
