"""Does a CPU cap deliver its share? The same work run uncapped and under emulate's caps of 1/2 … 1/8 core.

Why: emulate dilates time by K and caps each device at 1/K of a core (fedbw/processes/cpu_cap.py), so that
a device's CPU work takes as long in emulated time as on its own core. That holds only if a cap of 1/K
delivers 1/K of a core: then the work's wall time under the cap is K × its uncapped time. Emulate's rounds
grew when the dilation doubled (benchmarks/dilation.py); if small caps deliver less than their share, the
CPU-bound parts of a round (a ClientApp's start, the app's own work) grow with K, which would explain it.

Three workloads, each in a fresh process placed in a capped cgroup before it starts its work: a pure-Python
loop (one thread), a ClientApp's start as Flower's SuperExec runs it (``import flwr, torch`` and fedbw's
app module, several threads), and the same start with torch's and OpenMP's pools at one thread.
Per cap: the work's wall time ÷ (its uncapped time × K), and what the cap delivered: the work's CPU time ÷
(its wall time × the cap) — 1.0 is a cap that gives its share of a core, all of it. The two differ where the
uncapped work runs on more than one core at once: then its CPU time exceeds its uncapped wall time, and a cap
of one core's share (a one-core device) cannot give it that parallelism; the CPU time ÷ the uncapped wall
time says how much. Needs a writable cgroup (root), as emulate's caps do.

With ``--period-ms P`` the caps account over periods of P ms instead of emulate's 100 ms (a throttled group
runs 1/K of each period and waits out the rest: a longer period waits less often, in longer stretches).

``--compare-periods P1,P2`` runs each workload under every cap at each period, alternating them run by run
(side by side, one run: what a period does to the work's CPU time).

Usage: .venv/bin/python benchmarks/cpu_cap.py [--repeats N] [--period-ms P | --compare-periods P1,P2]
Writes benchmarks/results/cpu-cap.json (emulate's period), cpu-cap-period-P.json or cpu-cap-periods.json;
docs/fidelity.md's tables come from them (`fedbw docs`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RESULT = ROOT / "benchmarks" / "results" / "cpu-cap.json"
#: the dilations whose caps are timed (1: uncapped, the reference)
FACTORS = (1, 2, 4, 8)
#: what each workload runs once its process is in the group (it waits on stdin until placed)
CLIENTAPP_START = "import flwr.clientapp, torch\nimport fedbw.fl.client_app\n"
WORKLOADS = {
    "python loop": "s = 0\nfor i in range(12_000_000):\n    s += i * i\n",
    "ClientApp start": CLIENTAPP_START,
    # the same with torch's and OpenMP's thread pools at one thread: is it the threads that lose the quota?
    "ClientApp start, 1 thread": CLIENTAPP_START,
}
#: the environment a workload runs with besides the host's
WORKLOAD_ENV = {"ClientApp start, 1 thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                                              "OPENBLAS_NUM_THREADS": "1"}}


def _timed(code: str, group: Any, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the kernel's count for the process) of ``code`` in a fresh
    interpreter placed in ``group`` (None: uncapped) before it runs."""
    proc = subprocess.Popen([sys.executable, "-c", f"import sys; sys.stdin.readline()\n{code}"],
                            stdin=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    try:
        if group is not None:
            group.add(proc.pid)
        t0 = time.perf_counter()
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    except BaseException:  # Ctrl-C included: the workload never outlives the benchmark
        proc.kill()
        proc.wait()
        raise
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the workload failed (exit {proc.returncode}):\n{code}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="runs per workload and cap (the median is kept)")
    ap.add_argument("--period-ms", type=int, default=None, help="the caps' accounting period (default: emulate's)")
    ap.add_argument("--compare-periods", default=None, metavar="P1,P2",
                    help="periods in ms to run side by side, alternating run by run")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    from fedbw.processes.cpu_cap import PERIOD_US, CpuCaps

    if args.compare_periods is not None:
        try:
            periods = [int(x) for x in args.compare_periods.split(",")]
        except ValueError:
            ap.error("--compare-periods takes whole milliseconds, e.g. 100,400")
        if len(periods) < 2 or not all(1 <= ms <= 1000 for ms in periods):
            ap.error("--compare-periods needs two or more periods of 1 … 1000 ms")
        return compare_periods(periods, args.repeats)

    period_us = PERIOD_US if args.period_ms is None else args.period_ms * 1000
    if not 1_000 <= period_us <= 1_000_000:
        ap.error("--period-ms must be 1 … 1000 (the kernel's bounds)")
    result = RESULT if period_us == PERIOD_US else RESULT.with_name(f"cpu-cap-period-{period_us // 1000}.json")

    out = _header("cpu-cap", args.repeats, period_ms=period_us / 1000)
    with CpuCaps(_caps_root()) as caps:
        for name, code in WORKLOADS.items():
            base = None
            for k in FACTORS:
                times, cpus = [], []
                for i in range(args.repeats):
                    group = None if k == 1 else caps.group(f"{_label(name)}-{k}-{i}", 1.0 / k, period_us)
                    wall_s, cpu_s = _timed(code, group, WORKLOAD_ENV.get(name))
                    times.append(wall_s)
                    cpus.append(cpu_s)
                wall = statistics.median(times)
                base = wall if k == 1 else base
                assert base is not None
                # per run: CPU seconds the work got ÷ the seconds its cap allowed it over its wall time
                delivered = statistics.median(c / (t / k) for c, t in zip(cpus, times))
                out["rows"].append({"workload": name, "factor": k, "cap_cores": 1.0 / k, "wall_s": wall,
                                    "times_s": times, "cpu_times_s": cpus, "cpu_s": statistics.median(cpus),
                                    "slowdown_per_share": wall / (base * k), "delivered_share": delivered,
                                    "cpu_per_uncapped_wall": statistics.median(cpus) / base})
                print(f"{name:16s} cap 1/{k:<2d}: {wall:7.2f} s  ({wall / (base * k):.2f} × the share's; "
                      f"the cap gave {delivered:.3f} of its share; CPU {statistics.median(cpus):.2f} s)", flush=True)
    result.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    from fedbw.report.validation_table import cpu_cap_markdown

    print(cpu_cap_markdown(out))


def compare_periods(periods_ms: list[int], repeats: int) -> None:
    """Every workload uncapped, then under every cap at each period, the periods alternating run by run; writes
    cpu-cap-periods.json."""
    from fedbw.processes.cpu_cap import CpuCaps

    out = _header("cpu-cap-periods", repeats, periods_ms=periods_ms)
    with CpuCaps(_caps_root()) as caps:
        for name, code in WORKLOADS.items():
            runs = [_timed(code, None, WORKLOAD_ENV.get(name)) for _ in range(repeats)]
            out["rows"].append(_row(name, 1, None, runs))
            for k in FACTORS[1:]:
                by: dict[int, list[tuple[float, float]]] = {ms: [] for ms in periods_ms}
                for i in range(repeats):
                    for ms in periods_ms:
                        group = caps.group(f"{_label(name)}-{k}-{ms}-{i}", 1.0 / k, ms * 1000)
                        by[ms].append(_timed(code, group, WORKLOAD_ENV.get(name)))
                for ms in periods_ms:
                    out["rows"].append(_row(name, k, ms, by[ms]))
                    print(f"{name:16s} cap 1/{k:<2d} {ms:4d} ms: CPU {out['rows'][-1]['cpu_s']:.2f} s", flush=True)
    RESULT.with_name("cpu-cap-periods.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    from fedbw.report.validation_table import cpu_cap_periods_markdown

    print(cpu_cap_periods_markdown(out))


def _caps_root() -> Any:
    """Where the benchmark's capped groups go; exits with the reason when this host has none."""
    from fedbw.processes.cpu_cap import cgroup_root

    root = cgroup_root()
    if isinstance(root, str):
        raise SystemExit(f"no CPU caps here: {root}")
    return root


def _header(benchmark: str, repeats: int, **settings: Any) -> dict[str, Any]:
    """A result's head: what ran, when, where, and its settings; rows follow."""
    return {"benchmark": benchmark, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores, "
                       f"Python {platform.python_version()}",
            "repeats": repeats, **settings, "rows": []}


def _label(workload: str) -> str:
    """A workload's name as a cgroup name can carry it."""
    return "".join(ch if ch.isalnum() else "-" for ch in workload)


def _row(name: str, k: int, period_ms: int | None, runs: list[tuple[float, float]]) -> dict[str, Any]:
    return {"workload": name, "factor": k, "period_ms": period_ms, "times_s": [w for w, _ in runs],
            "cpu_times_s": [c for _, c in runs], "wall_s": statistics.median(w for w, _ in runs),
            "cpu_s": statistics.median(c for _, c in runs)}


if __name__ == "__main__":
    main()
