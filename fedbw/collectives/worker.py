"""One rank: ``python -m fedbw.collectives.worker SPEC.json`` (started by :mod:`.launch`, never by hand).

It joins the process group through the store rank 0 opens, runs one job (the AllReduce sweep or the
DDP step) and prints one ``FEDBW-RESULT`` line of JSON; rank 0 may print ``FEDBW-PROGRESS`` lines.
These lines are the protocol between a rank and :func:`fedbw.collectives.launch.run_ranks`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from fedbw.collectives.context import RankContext
from fedbw.collectives.launch import RESULT_LINE, STORE_LINE


def job(name: str) -> Callable[[RankContext], dict[str, Any]]:
    """The function a rank runs for ``name`` (imported only in the rank that needs it)."""
    if name == "allreduce":
        from fedbw.collectives.allreduce_rank import run_allreduce

        return run_allreduce
    if name == "step":
        from fedbw.collectives.step_rank import run_step

        return run_step
    raise ValueError(f"unknown rank job {name!r}")


def main(argv: list[str] | None = None) -> int:
    import torch
    import torch.distributed as dist

    spec = json.loads(Path((argv or sys.argv[1:])[0]).read_text(encoding="utf-8"))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    addr = os.environ["MASTER_ADDR"]
    torch.set_num_threads(int(spec.get("threads", 1)))
    timeout = dt.timedelta(seconds=float(spec.get("timeout_s", 300)))
    if rank == 0:
        store = dist.TCPStore(addr, 0, world, True, timeout=timeout, wait_for_workers=False)
        print(STORE_LINE, store.port, flush=True)
    else:
        store = dist.TCPStore(addr, int(os.environ["MASTER_PORT"]), world, False, timeout=timeout)
    backend = spec["backend"]
    device = torch.device("cpu")
    if backend == "nccl" or spec.get("device") == "cuda":  # one GPU per rank; gloo ranks may share one
        local = rank % torch.cuda.device_count()
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    if backend == "nccl":
        dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=timeout, device_id=device)
    else:
        dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=timeout)
    try:
        result = job(spec["job"])(RankContext(rank, world, backend, device, spec))
    finally:
        dist.destroy_process_group()
    print(RESULT_LINE, json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    # The result is printed and flushed: leave without the interpreter's teardown, where torch's C++
    # destructors (gloo's threads, the profiler's) can abort the process (seen once in a full suite: a rank
    # exited with SIGABRT right after its result line), which would fail a finished measurement.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
