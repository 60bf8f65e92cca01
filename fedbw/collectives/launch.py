"""Start p torch.distributed ranks as supervised child processes, and collect what each one reports.

Rank 0 opens the rendezvous store on a port the kernel picks and says which; the other ranks are
started only then, so no port is guessed and none can be taken in between. Every rank runs in a
session of its own under :class:`fedbw.processes.Supervisor`, so all of them stop on success, on the
first rank that fails (its last log lines become the error), on Ctrl-C and on SIGTERM/SIGHUP.

Where the ranks run is a :class:`Placement`: loopback by default (gloo pinned to ``lo``, so no byte
leaves the machine), local GPUs for NCCL, or — in benchmarks/allreduce_netns.py — one network
namespace per rank behind a rate-limited veth.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from fedbw.errors import RunError
from fedbw.processes import Child, LogLine, Supervisor

STORE_LINE = "FEDBW-STORE"
RESULT_LINE = "FEDBW-RESULT"
PROGRESS_LINE = "FEDBW-PROGRESS"
#: Seconds a rank may take to import torch and open the store on two busy cores.
START_TIMEOUT_S = 120.0
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class Placement:
    """Loopback on this machine: every rank a local process, gloo and NCCL bootstrap on ``lo``."""

    master_addr = "127.0.0.1"
    link_gbps: float | None = None  #: payload rate of a rank's link (GB/s) if one is in the path, else None

    def argv_prefix(self, rank: int) -> list[str]:
        """What the rank's command runs under (``ip netns exec NS`` for a namespace)."""
        return []

    def env(self, rank: int) -> dict[str, str]:
        return {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}

    def describe(self) -> str:
        return "loopback (one machine, no link in the path)"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass
class RankResults:
    results: list[dict[str, Any]]  #: what each rank reported, by rank
    wall_s: float


def run_ranks(job: str, spec: dict[str, Any], ranks: int, *, placement: Placement | None = None,
              timeout_s: float = 1800.0, on_progress: Callable[[dict[str, Any]], None] | None = None) -> RankResults:
    """Run ``job`` (a name in :data:`fedbw.collectives.worker.JOBS`) on ``ranks`` processes.

    Returns each rank's result; RunError names the rank that failed or the time that ran out.
    """
    placement = placement or Placement()
    log_dir = Path(tempfile.mkdtemp(prefix=f"fedbw-{job}-"))
    threads = max(1, usable_cores() // ranks)
    spec = {**spec, "job": job, "threads": threads}
    spec_path = log_dir / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    base_env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_PACKAGE_ROOT),
                                                                          os.environ.get("PYTHONPATH")])),
                "OMP_NUM_THREADS": str(threads), "WORLD_SIZE": str(ranks), "MASTER_ADDR": placement.master_addr,
                "PYTHONUNBUFFERED": "1"}

    def on_line(child: Child, line: LogLine) -> None:
        if on_progress is not None and line.text.startswith(PROGRESS_LINE):
            on_progress(json.loads(line.text.split(" ", 1)[1]))

    t0 = time.perf_counter()
    with Supervisor() as sup:
        def start(rank: int, extra: dict[str, str]) -> Child:
            argv = [*placement.argv_prefix(rank), sys.executable, "-m", "fedbw.collectives.worker", str(spec_path)]
            env = {**base_env, **placement.env(rank), **extra, "RANK": str(rank), "LOCAL_RANK": str(rank)}
            return sup.start(f"rank {rank}", argv, env, log_dir / f"rank{rank}.log", stamp=False,
                             on_line=on_line if rank == 0 else None, stop_grace_s=3.0)

        first = start(0, {})
        port = first.wait_for_line(STORE_LINE, START_TIMEOUT_S).text.split()[1]
        children = [first] + [start(r, {"MASTER_PORT": port}) for r in range(1, ranks)]
        _wait_all(children, t0 + timeout_s)
    results = []
    for child in children:
        found = [ln.text for ln in child.snapshot_lines() if ln.text.startswith(RESULT_LINE)]
        if not found:
            raise RunError(child.describe_failure("finished without a result"))
        results.append(json.loads(found[-1].split(" ", 1)[1]))
    shutil.rmtree(log_dir, ignore_errors=True)  # kept only when a rank failed: the error names its log
    return RankResults(results, time.perf_counter() - t0)


def _wait_all(children: list[Child], deadline: float) -> None:
    """Until every rank has exited 0; RunError for the first that exits otherwise or at the deadline."""
    while True:
        running = 0
        for child in children:
            code = child.returncode
            if code is None:
                running += 1
            elif code != 0 and not child.expected_exit:
                child.wait(5.0)  # read its output to the end for the error
                raise RunError(child.describe_failure(f"exited with code {code}"))
            else:
                child.expected_exit = True
        if not running:
            for child in children:
                child.wait(10.0)
            return
        if time.perf_counter() > deadline:
            slow = next(c for c in children if c.alive)
            raise RunError(slow.describe_failure("did not finish in time (raise --timeout or measure fewer sizes)"))
        time.sleep(0.05)
