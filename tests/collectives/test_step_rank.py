"""How profiler events become step windows, compute and AllReduce intervals (CPU and GPU), without ranks."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.distributed as dist

from fedbw.collectives.step_rank import STEP_MARK, _intervals, counting_allreduce


@dataclass
class Ev:
    name: str
    start: float
    end: float
    thread: int = 1
    device_type: str = "DeviceType.CPU"

    @property
    def time_range(self) -> SimpleNamespace:
        return SimpleNamespace(start=self.start, end=self.end)


def _prof(events: list[Ev]) -> SimpleNamespace:
    return SimpleNamespace(events=lambda: events)


def test_cpu_events_gloo_threads_are_communication() -> None:
    evs = [Ev(STEP_MARK, 0, 100), Ev("aten::convolution_backward", 5, 40), Ev("autograd::engine::x", 40, 60),
           Ev("gloo:all_reduce", 30, 70, thread=7), Ev("gloo:broadcast", 0, 1, thread=7),
           Ev("aten::copy_", 10, 20, thread=7),  # on a gloo thread: not the training thread's compute
           Ev("c10d::allreduce_", 50, 52), Ev("Optimizer.step#SGD.step", 80, 90)]
    steps, compute, comm = _intervals(_prof(evs), on_gpu=False)
    assert steps == [(0, 100)] and comm == [(30, 70)]
    assert sorted(compute) == [(5, 40), (40, 60), (80, 90)]


def test_gpu_kernels_nccl_is_communication_and_annotations_are_not_steps() -> None:
    cuda = "DeviceType.CUDA"
    evs = [Ev(STEP_MARK, 0, 100), Ev(STEP_MARK, 2, 98, device_type=cuda),
           Ev("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 60, 90, device_type=cuda),
           Ev("volta_sgemm_128x64", 10, 70, device_type=cuda), Ev("aten::mm", 5, 8)]
    steps, compute, comm = _intervals(_prof(evs), on_gpu=True)
    assert steps == [(0, 100)] and comm == [(60, 90)] and compute == [(10, 70)]


def test_counting_allreduce_counts_and_restores(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(dist, "all_reduce", lambda t, *a, **k: calls.append(t.numel()))
    original = dist.all_reduce
    with counting_allreduce() as counted:
        dist.all_reduce(torch.zeros(10, dtype=torch.float16))
        dist.all_reduce(torch.zeros(3))
    assert counted == [10 * 2 + 3 * 4, 2] and calls == [10, 3]
    assert dist.all_reduce is original
