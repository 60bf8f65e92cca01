"""One data-parallel training step, measured on real DDP ranks, with the article's remedies and the model.

:func:`measure_step` runs the variants of :mod:`.step_rank` on ``ranks`` processes, averages them over
the ranks, compares each remedy with DDP as shipped, checks the communication share against the 30 %
line, and models the same step on catalog fabrics and home uplinks with the byte ratios it measured.
It returns data; :mod:`fedbw.report.datacenter` prints it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from statistics import mean
from typing import Any, Callable

from fedbw import catalog
from fedbw.collectives.launch import Placement, run_ranks
from fedbw.collectives.machine import machine_info, require_gpus
from fedbw.collectives.step_model import ModelledStep, model_steps
from fedbw.errors import ConfigError

#: The article's line: past this share of a step in communication, the network is the bottleneck.
COMM_SHARE_LINE = 0.30
VARIANTS = ("no-comm", "overlap", "no-overlap", "accumulate", "fp16", "powersgd")
BASELINE = "overlap"


@dataclass(frozen=True)
class VariantResult:
    variant: str
    micro_batches: int
    step_s: float  #: one optimizer step (all its micro-batches), mean over steps and ranks
    compute_s: float  #: profiler: time some compute ran
    comm_s: float  #: profiler: time some AllReduce was in flight
    exposed_s: float  #: profiler: AllReduce time with no compute beside it
    bytes_per_step: float  #: bytes handed to AllReduce per rank and optimizer step
    wire_bytes_per_step: float  #: what a ring sends per rank: 2(p−1)/p × bytes_per_step
    samples_per_step: int  #: over all ranks
    allreduce_calls_per_step: float

    @property
    def exposed_share(self) -> float:
        return self.exposed_s / self.step_s if self.step_s > 0 else 0.0

    @property
    def time_per_sample_s(self) -> float:
        return self.step_s / self.samples_per_step

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"exposed_share": self.exposed_share, "time_per_sample_s": self.time_per_sample_s}


@dataclass(frozen=True)
class StepMeasurement:
    model: str
    params: int
    backend: str
    ranks: int
    batch_size: int  #: per rank and micro-batch
    steps: int
    warmup: int
    accumulate: int
    powersgd_rank: int
    variants: list[VariantResult]
    modelled: list[ModelledStep]
    model_ranks: int
    model_batch_size: int
    device_profile: str
    device: str = "cpu"
    environment: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    def variant(self, name: str) -> VariantResult | None:
        return next((v for v in self.variants if v.variant == name), None)

    def speedup(self, v: VariantResult) -> float | None:
        """How many times faster per sample than DDP as shipped (> 1: the remedy helps)."""
        base = self.variant(BASELINE)
        return base.time_per_sample_s / v.time_per_sample_s if base and v.time_per_sample_s > 0 else None

    @property
    def over_line(self) -> bool:
        base = self.variant(BASELINE)
        return bool(base and base.exposed_share > COMM_SHARE_LINE)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "step", "model": self.model, "params": self.params, "backend": self.backend,
                "device": self.device,
                "ranks": self.ranks, "batch_size": self.batch_size, "steps": self.steps, "warmup": self.warmup,
                "accumulate": self.accumulate, "powersgd_rank": self.powersgd_rank,
                "comm_share_line": COMM_SHARE_LINE, "environment": self.environment, "wall_s": self.wall_s,
                "variants": [v.to_json() | {"speedup_vs_ddp": self.speedup(v)} for v in self.variants],
                "model_ranks": self.model_ranks, "model_batch_size": self.model_batch_size,
                "device_profile": self.device_profile,
                "modelled": [m.to_json() for m in self.modelled]}


def check_step_request(model: str, ranks: int, backend: str, batch_size: int, steps: int, accumulate: int,
                       powersgd_rank: int, variants: list[str]) -> catalog.ModelSpec:
    spec = catalog.get_model(model)
    if not spec.trainable_here:
        trainable = ", ".join(m.name for m in catalog.MODELS.values() if m.trainable_here)
        raise ConfigError(f"{model} has no torch module here; fedbw step trains one of: {trainable}")
    if backend not in ("gloo", "nccl"):
        raise ConfigError(f"--backend must be gloo or nccl (got {backend!r})")
    if not 2 <= ranks <= 64:
        raise ConfigError(f"--ranks must be between 2 and 64 (got {ranks})")
    if batch_size < 1 or steps < 1 or accumulate < 2 or powersgd_rank < 1:
        raise ConfigError("need --batch-size ≥ 1, --steps ≥ 1, --accumulate ≥ 2 and --powersgd-rank ≥ 1")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise ConfigError(f"--variants: choose from {', '.join(VARIANTS)} (got {', '.join(unknown) or 'none'})")
    if backend == "nccl":
        require_gpus(ranks, "fedbw step with NCCL")
    return spec


def _merge(name: str, per_rank: list[dict[str, Any]], ranks: int, batch_size: int) -> VariantResult:
    rs = [next(v for v in r["variants"] if v["variant"] == name) for r in per_rank]
    sent = mean(r["bytes_per_step"] for r in rs)
    micro = rs[0]["micro_batches"]
    return VariantResult(name, micro, mean(r["step_s"] for r in rs), mean(r["compute_s"] for r in rs),
                         mean(r["comm_s"] for r in rs), mean(r["exposed_s"] for r in rs), sent,
                         2 * (ranks - 1) / ranks * sent, batch_size * micro * ranks,
                         mean(r["allreduce_calls_per_step"] for r in rs))


def measure_step(model: str, ranks: int = 2, backend: str = "gloo", *, batch_size: int = 4, steps: int = 3,
                 warmup: int = 2, accumulate: int = 4, powersgd_rank: int = 2, variants: list[str] | None = None,
                 model_ranks: int = 8, model_batch_size: int = 32, device_profile: str = "dc-gpu",
                 fabrics: list[str] | None = None, uplinks: list[str] | None = None, seed: int = 0,
                 device: str | None = None, placement: Placement | None = None, timeout_s: float = 1800.0,
                 on_progress: Callable[[dict[str, Any]], None] | None = None) -> StepMeasurement:
    """Measure the step's variants on ``ranks`` DDP ranks and model it on fabrics and uplinks.

    ``device``: where the ranks train — ``cuda`` for NCCL (one GPU per rank), ``cpu`` for gloo unless
    ``cuda`` is asked for (gloo ranks may then share one GPU: compute on it, AllReduce through the host).
    """
    chosen = list(variants or VARIANTS)
    spec = check_step_request(model, ranks, backend, batch_size, steps, accumulate, powersgd_rank, chosen)
    catalog.get_device_profile(device_profile)
    device = device or ("cuda" if backend == "nccl" else "cpu")
    if device not in ("cpu", "cuda") or (backend == "nccl" and device != "cuda"):
        raise ConfigError(f"--device must be cpu or cuda, and cuda with NCCL (got {device!r} with {backend})")
    if device == "cuda" and backend == "gloo":
        require_gpus(1, "fedbw step --device cuda")
    if model_ranks < 2 or model_batch_size < 1:
        raise ConfigError(f"--model-ranks must be ≥ 2 and --model-batch-size ≥ 1 (got {model_ranks}, "
                          f"{model_batch_size})")
    env = machine_info(device)
    job = {"backend": backend, "device": device, "model": model,
           "input_shape": list(spec.input_shape), "num_classes": spec.num_classes,
           "tokens": len(spec.input_shape) == 1, "batch_size": batch_size, "steps": steps, "warmup": warmup,
           "accumulate": accumulate, "powersgd_rank": powersgd_rank, "variants": chosen, "seed": seed,
           "timeout_s": min(timeout_s, 600.0)}
    done = run_ranks("step", job, ranks, placement=placement, timeout_s=timeout_s, on_progress=on_progress)
    results = [_merge(v, done.results, ranks, batch_size) for v in chosen]
    by_name = {v.variant: v for v in results}
    base = by_name.get(BASELINE) or by_name.get("no-overlap")
    grad_bytes = base.bytes_per_step if base and base.bytes_per_step > 0 else 4.0 * spec.params
    ratios = {k: by_name[k].bytes_per_step / grad_bytes for k in ("fp16", "powersgd") if k in by_name}
    modelled = model_steps(model, model_batch_size, model_ranks, device_profile, grad_bytes, ratios, accumulate,
                           fabrics, uplinks)
    return StepMeasurement(model, spec.params, backend, ranks, batch_size, steps, warmup, accumulate, powersgd_rank,
                           results, modelled, model_ranks, model_batch_size, device_profile, device, env,
                           done.wall_s)
