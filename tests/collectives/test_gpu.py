"""The GPU path: NCCL AllReduce and DDP steps on CUDA. Skipped cleanly where torch sees no GPU; the
CPU-only check is that asking for NCCL there is a clear error, not a hang or a traceback."""

from __future__ import annotations

import pytest
import torch

from fedbw.errors import ConfigError

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
needs_gpu = pytest.mark.skipif(GPUS < 1, reason="no CUDA device visible to torch")
needs_two = pytest.mark.skipif(GPUS < 2, reason="NCCL needs two CUDA devices (one per rank)")


@pytest.mark.skipif(GPUS > 0, reason="CUDA present: the error cannot be provoked")
def test_nccl_without_gpus_is_a_config_error() -> None:
    from fedbw.collectives.allreduce import measure_allreduce
    from fedbw.collectives.step import measure_step

    with pytest.raises(ConfigError, match="needs CUDA GPUs"):
        measure_allreduce("nccl", [2], [1024])
    with pytest.raises(ConfigError, match="needs CUDA GPUs"):
        measure_step("mlp", 2, "nccl")
    with pytest.raises(ConfigError, match="needs CUDA GPUs"):
        measure_step("mlp", 2, "gloo", device="cuda")


@pytest.mark.slow
@needs_two
def test_nccl_allreduce_checks_and_times() -> None:
    from fedbw.collectives.allreduce import measure_allreduce

    m = measure_allreduce("nccl", [2], [1024, 1 << 20], "bfloat16", iters=5, warmup=2, fabric="nvlink4")
    (t,) = m.tables
    assert all(r.ip_wrong == 0 and r.oop_wrong == 0 and r.ip_time_s > 0 for r in t.rows)
    assert t.verdict.bound == "device" and m.environment["gpus"]


@pytest.mark.slow
@needs_gpu
def test_ddp_step_on_cuda() -> None:
    from fedbw.collectives.step import measure_step

    backend = "nccl" if GPUS >= 2 else "gloo"
    m = measure_step("small-cnn", 2, backend, device="cuda", steps=2, warmup=1, variants=["overlap", "fp16"])
    v = {r.variant: r for r in m.variants}
    assert v["fp16"].bytes_per_step == v["overlap"].bytes_per_step / 2
    assert all(r.step_s > 0 and r.compute_s > 0 for r in m.variants)


# ---------------------------------------------------------------- benchmarks/gpu.py and docs/gpu.md

def _gpu_bench():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu.py"
    spec = importlib.util.spec_from_file_location("gpu_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


@pytest.mark.skipif(GPUS > 0, reason="CUDA present: the script would run its checks")
def test_gpu_script_without_cuda_says_so_and_exits_0() -> None:
    import subprocess
    import sys

    bench = _gpu_bench()
    res = subprocess.run([sys.executable, str(bench.ROOT / "benchmarks" / "gpu.py")], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and "GPU checks skipped" in res.stdout and "no CUDA" in res.stdout


def test_gpu_figures_render_from_json_parts() -> None:
    from fedbw.report.datacenter import gpu_markdown

    data = {"started": "2027-01-02T10:00:00+00:00", "cuda": "12.8", "nccl": "2.27.3",
            "machine": {"gpus": ["NVIDIA H200"], "cpu": "x", "packages": {"torch": "2.13.0"}},
            "timing": {"events_s": 0.010, "sync_s": 0.0102, "tflops_events": 687.0, "agree": True},
            "allreduce": {"skipped": "NCCL AllReduce needs ≥ 2 GPUs (one rank each); this machine has 1"},
            "step": {"error": "RunError: rank 0 exited with code 1\nmore"},
            "quickstart": {"device": "cuda (NVIDIA H200)", "rounds": 3, "mean_round_time_s": 0.5,
                           "mean_client_compute_s": 0.05, "final_accuracy": 0.9}}
    md = gpu_markdown(data)
    assert "2027-01-02 on 1 × NVIDIA H200" in md and "agree within 10 %" in md
    assert "skipped: NCCL AllReduce needs ≥ 2 GPUs" in md and "failed: RunError: rank 0 exited" in md
    assert "more" not in md and "device cuda (NVIDIA H200), 3 rounds" in md and "90.0 %" in md


def test_gpu_page_holds_measured_figures_or_says_there_are_none() -> None:
    """docs/gpu.md's figures are generated from benchmarks/results/gpu.json (tests/test_docs.py checks the
    match); without that file the page says so and shows no figure."""
    from fedbw.report.doc_blocks import BLOCK

    bench = _gpu_bench()
    blocks = {m.group("name"): m.group("body") for m in BLOCK.finditer(bench.DOC.read_text())}
    assert "gpu.figures" in blocks
    if not bench.OUT.exists():
        assert blocks["gpu.figures"].startswith("(no data yet") and "benchmarks/gpu.py" in blocks["gpu.figures"]