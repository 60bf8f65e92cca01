"""One data-parallel training step inside a rank: torch DDP, timed, profiled, and the article's remedies.

Each variant gets a fresh copy of the model (a DDP comm hook can be registered once) and runs warm-up
steps, then timed steps under torch.profiler. Variants:

* ``no-comm`` — every backward under ``no_sync()``: the compute alone, the reference;
* ``overlap`` — DDP as shipped: gradient buckets AllReduced while backward still runs;
* ``no-overlap`` — backward under ``no_sync()``, then one AllReduce of all gradients: nothing hidden;
* ``accumulate`` — k micro-batches per optimizer step, only the last one synchronised;
* ``fp16`` / ``powersgd`` — torch's own DDP comm hooks (``fp16_compress_hook``, ``powerSGD_hook``).

BatchNorm buffers are not broadcast before each forward (``forward_sync_buffers=False``): the gradient
AllReduce is the only communication. Bytes: every tensor handed to ``torch.distributed.all_reduce``
during the timed steps is counted (the hooks call it; the default path uses torch's ``allreduce_hook``,
which DDP documents as identical to its built-in AllReduce). Profiler: AllReduce intervals are gloo's
``gloo:all_reduce`` events (on its worker threads) or, on GPU, NCCL's kernels; compute is every other
operator (on the training thread) or kernel.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from fedbw.collectives.exposure import breakdown

if TYPE_CHECKING:
    from fedbw.collectives.context import RankContext

STEP_MARK = "fedbw:step"
VARIANTS = ("no-comm", "overlap", "no-overlap", "accumulate", "fp16", "powersgd")
#: PowerSGD compresses from this step on (steps before it AllReduce uncompressed, to warm its state).
POWERSGD_START = 2


@contextlib.contextmanager
def counting_allreduce() -> Iterator[list[int]]:
    """Count the bytes of every tensor passed to ``torch.distributed.all_reduce`` inside the block."""
    counted = [0, 0]  # bytes, calls
    original = dist.all_reduce

    def counted_all_reduce(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        counted[0] += tensor.numel() * tensor.element_size()
        counted[1] += 1
        return original(tensor, *args, **kwargs)

    dist.all_reduce = counted_all_reduce
    try:
        yield counted
    finally:
        dist.all_reduce = original


def synthetic_batch(spec: dict[str, Any], batch: int, gen: torch.Generator, device: torch.device
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Random inputs of the catalog model's shape: images and labels, or tokens (next-token targets)."""
    shape, classes = tuple(spec["input_shape"]), int(spec["num_classes"])
    if spec["tokens"]:
        x = torch.randint(0, classes, (batch, *shape), generator=gen).to(device)
        return x, x
    x = torch.randn((batch, *shape), generator=gen)
    return x.to(device), torch.randint(0, classes, (batch,), generator=gen).to(device)


def loss_of(model: nn.Module, x: torch.Tensor, y: torch.Tensor, tokens: bool) -> torch.Tensor:
    out = model(x)
    if tokens:
        return nn.functional.cross_entropy(out[:, :-1].reshape(-1, out.shape[-1]), y[:, 1:].reshape(-1))
    return nn.functional.cross_entropy(out, y)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_step(variant: str, ddp: DDP, opt: torch.optim.Optimizer, batches: list[tuple[torch.Tensor, torch.Tensor]],
              tokens: bool, world: int) -> Callable[[], None]:
    """The function one optimizer step of ``variant`` runs (forward, backward, communication, update)."""

    def backward(x: torch.Tensor, y: torch.Tensor, sync: bool) -> None:
        ctx = contextlib.nullcontext() if sync else ddp.no_sync()
        with ctx:
            loss_of(ddp, x, y, tokens).backward()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        if variant == "no-comm":
            backward(*batches[0], sync=False)
        elif variant == "no-overlap":
            backward(*batches[0], sync=False)
            grads = [p.grad for p in ddp.parameters() if p.grad is not None]
            flat = torch.cat([g.reshape(-1) for g in grads]).div_(world)
            dist.all_reduce(flat)
            offset = 0
            for g in grads:
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
        elif variant == "accumulate":
            for i, (x, y) in enumerate(batches):
                backward(x, y, sync=i == len(batches) - 1)
        else:
            backward(*batches[0], sync=True)
        opt.step()

    return step


def build_ddp(ctx: "RankContext", variant: str) -> DDP:
    from fedbw.models.zoo import build_model

    torch.manual_seed(int(ctx.spec["seed"]))  # the same initial weights on every rank
    model = build_model(ctx.spec["model"]).to(ctx.device)
    # forward_sync_buffers=False: BatchNorm statistics stay per rank (as in FedBN), so the step's only
    # communication is the gradient AllReduce the variants change.
    ddp = DDP(model, device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None,
              forward_sync_buffers=False)
    if variant in ("overlap", "accumulate", "no-comm", "no-overlap"):
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    elif variant == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif variant == "powersgd":
        state = powerSGD_hook.PowerSGDState(process_group=None, start_powerSGD_iter=POWERSGD_START,
                                            matrix_approximation_rank=int(ctx.spec["powersgd_rank"]))
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    else:
        raise ValueError(f"unknown variant {variant!r}")
    return ddp


def _intervals(prof: Any, on_gpu: bool) -> tuple[list[tuple[float, float]], list[tuple[float, float]],
                                                 list[tuple[float, float]]]:
    """(step windows, compute intervals, AllReduce intervals) in µs from one profiler run."""
    steps, compute, comm = [], [], []
    events = list(prof.events())
    comm_threads = {e.thread for e in events if e.name.startswith("gloo:")}
    for e in events:
        a, b = float(e.time_range.start), float(e.time_range.end)
        name = e.name
        is_gpu = "CUDA" in str(getattr(e, "device_type", ""))
        if name == STEP_MARK:  # the GPU-side copy of the annotation is not a step
            if not is_gpu:
                steps.append((a, b))
            continue
        if on_gpu:
            if is_gpu:
                (comm if "nccl" in name.lower() else compute).append((a, b))
        elif name.startswith("gloo:"):
            if "all_reduce" in name:
                comm.append((a, b))
        elif e.thread not in comm_threads and (name.startswith("aten::") or name.startswith("autograd::")
                                               or name.startswith("Optimizer.")):
            compute.append((a, b))
    return sorted(steps), compute, comm


def run_variant(ctx: "RankContext", variant: str) -> dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile, record_function

    spec = ctx.spec
    micro = int(spec["accumulate"]) if variant == "accumulate" else 1
    gen = torch.Generator().manual_seed(int(spec["seed"]) * 1000 + ctx.rank)
    batches = [synthetic_batch(spec, int(spec["batch_size"]), gen, ctx.device) for _ in range(micro)]
    ddp = build_ddp(ctx, variant)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    step = make_step(variant, ddp, opt, batches, bool(spec["tokens"]), ctx.world)
    for _ in range(max(int(spec["warmup"]), POWERSGD_START)):
        step()
    _sync(ctx.device)
    dist.barrier()
    on_gpu = ctx.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    times = []
    with counting_allreduce() as counted, profile(activities=activities) as prof:
        for _ in range(int(spec["steps"])):
            with record_function(STEP_MARK):
                t0 = time.perf_counter()
                step()
                _sync(ctx.device)
                times.append(time.perf_counter() - t0)
    windows, compute, comm = _intervals(prof, on_gpu)
    parts = [breakdown(w, compute, comm, 1e-6) for w in windows]
    n, steps = max(1, len(parts)), int(spec["steps"])
    return {"variant": variant, "micro_batches": micro, "step_s": sum(times) / len(times),
            "compute_s": sum(p.compute_s for p in parts) / n, "comm_s": sum(p.comm_s for p in parts) / n,
            "exposed_s": sum(p.exposed_s for p in parts) / n, "profiled_steps": len(parts),
            "bytes_per_step": counted[0] / steps, "allreduce_calls_per_step": counted[1] / steps}


def run_step(ctx: "RankContext") -> dict[str, Any]:
    """Every requested variant in turn; this rank's measurements."""
    out = []
    for i, variant in enumerate(ctx.spec["variants"]):
        out.append(run_variant(ctx, variant))
        ctx.progress({"variant": variant, "done": i + 1, "of": len(ctx.spec["variants"])})
    return {"rank": ctx.rank, "variants": out}
