"""The AllReduce sweep inside one rank, as nccl-tests' harness runs it.

Per size: out-of-place, then in-place; each with warm-up iterations, a barrier, then ``iters`` timed
iterations back to back and the mean. Afterwards the buffers are filled again and reduced once to
check every element (#wrong). The fill is a 0/1 pattern that depends on the rank and the index, so a
misplaced chunk or a missing rank shows, and every partial sum is a small integer — exact in
float32, bfloat16 and float16 alike.

torch.distributed's AllReduce works in place only: out-of-place here is ``recv.copy_(send)`` then
the in-place AllReduce of ``recv``, what a framework on torch pays for keeping its input (NCCL's own
out-of-place avoids the copy). Timing: ``perf_counter`` on CPU; on GPU CUDA events on the current
stream, read after ``synchronize``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

import psutil
import torch
import torch.distributed as dist

from fedbw.collectives.sizes import element_count

if TYPE_CHECKING:
    from fedbw.collectives.context import RankContext

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
#: The fill pattern's period: element i of rank r is 1 where (i + r) % PERIOD == 0, else 0.
PERIOD = 3


def pattern_buffer(count: int, rank: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A contiguous buffer of ``count`` elements holding rank ``rank``'s fill pattern."""
    rows = -(-count // PERIOD)
    backing = torch.zeros(rows, PERIOD, dtype=dtype, device=device)
    backing[:, (-rank) % PERIOD] = 1
    return backing.view(-1)[:count]


def fill_pattern(buf: torch.Tensor, rank: int) -> None:
    buf.copy_(pattern_buffer(buf.numel(), rank, buf.dtype, buf.device))


def expected_sum(count: int, world: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Element-wise sum of every rank's pattern: element i counts the ranks r with (i + r) % PERIOD == 0."""
    rows = -(-count // PERIOD)
    counts = [sum(1 for r in range(world) if (c + r) % PERIOD == 0) for c in range(PERIOD)]
    backing = torch.tensor(counts, dtype=dtype, device=device).expand(rows, PERIOD).contiguous()
    return backing.view(-1)[:count]


def count_wrong(result: torch.Tensor, expected: torch.Tensor) -> int:
    """Elements that differ from the exact sum (nccl-tests' #wrong)."""
    return int((result != expected).sum().item())


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _busy(before: Any, after: Any) -> float:
    """Machine-wide share of CPU time that was not idle between two psutil.cpu_times() samples."""
    total = sum(after) - sum(before)
    idle = (after.idle - before.idle) + (getattr(after, "iowait", 0.0) - getattr(before, "iowait", 0.0))
    return max(0.0, min(1.0, 1.0 - idle / total)) if total > 0 else 0.0


def time_loop(op: Callable[[], None], iters: int, warmup: int, device: torch.device) -> dict[str, float]:
    """Mean seconds per ``op`` over ``iters`` after ``warmup``, this process's CPU seconds per op and the
    machine's busy share meanwhile."""
    for _ in range(warmup):
        op()
    _sync(device)
    dist.barrier()
    _sync(device)
    cpu0, busy0 = time.process_time(), psutil.cpu_times()
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            op()
        end.record()
        end.synchronize()
        elapsed = start.elapsed_time(end) / 1e3
    else:
        t0 = time.perf_counter()
        for _ in range(iters):
            op()
        elapsed = time.perf_counter() - t0
    return {"time_s": elapsed / iters, "cpu_s": (time.process_time() - cpu0) / iters,
            "machine_busy": _busy(busy0, psutil.cpu_times())}


def measure_size(ctx: "RankContext", size: int, dtype: torch.dtype, iters: int, warmup: int) -> dict[str, Any]:
    """One size: out-of-place and in-place timing, then one checked AllReduce of each."""
    count = element_count(size, ctx.spec["dtype"])
    send = pattern_buffer(count, ctx.rank, dtype, ctx.device)
    recv = torch.empty_like(send)

    def out_of_place() -> None:
        recv.copy_(send)
        dist.all_reduce(recv)

    def in_place() -> None:
        dist.all_reduce(recv)

    oop = time_loop(out_of_place, iters, warmup, ctx.device)
    fill_pattern(recv, ctx.rank)
    ip = time_loop(in_place, iters, warmup, ctx.device)
    expected = expected_sum(count, ctx.world, dtype, ctx.device)
    out_of_place()
    wrong_oop = count_wrong(recv, expected) + count_wrong(send, pattern_buffer(count, ctx.rank, dtype, ctx.device))
    fill_pattern(recv, ctx.rank)
    in_place()
    wrong_ip = count_wrong(recv, expected)
    return {"size_bytes": count * send.element_size(), "count": count, "oop": oop, "ip": ip,
            "wrong_oop": wrong_oop, "wrong_ip": wrong_ip}


def run_allreduce(ctx: "RankContext") -> dict[str, Any]:
    """Every size of the sweep, out-of-place then in-place; returns this rank's rows."""
    dtype = TORCH_DTYPES[ctx.spec["dtype"]]
    sizes = ctx.spec["sizes"]
    rows = []
    for size in sizes:
        rows.append(measure_size(ctx, size, dtype, int(ctx.spec["iters"]), int(ctx.spec["warmup"])))
        ctx.progress({"size_bytes": rows[-1]["size_bytes"], "done": len(rows), "of": len(sizes)})
    return {"rank": ctx.rank, "rows": rows}
