"""The GPU checks in one go (under 5 minutes), for whenever a machine with CUDA is lent.

Usage: .venv/bin/python benchmarks/gpu.py [--write-docs] [--quick]
       .venv/bin/python benchmarks/gpu.py --docs-only     # rewrite docs/gpu.md's figures from the JSON

1. CUDA timing: one bf16 matmul loop timed with CUDA events and with synchronize + perf_counter (the two
   must agree, or every other GPU figure is suspect);
2. ``fedbw allreduce --backend nccl``: the nccl-tests table, 1 KiB – 256 MiB, one rank per GPU, beside
   the α-β model for NVLink 4 and the fitted α/β (skipped with a line saying so on a single GPU: NCCL
   puts one rank on each device);
3. ``fedbw step``: a ResNet-18 DDP step on CUDA with the remedies (NCCL with ≥ 2 GPUs; gloo between two
   ranks sharing the one GPU otherwise, which still times compute on the GPU);
4. the quickstart (``experiments/quickstart.toml``, simulate engine) with ``device = "cuda"``.
Without CUDA it prints why and exits 0. Each part has its own time limit and records its error without
stopping the others. Writes benchmarks/results/gpu.json; --write-docs fills docs/gpu.md from it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "results" / "gpu.json"
DOC = ROOT / "docs" / "gpu.md"


def nccl_version() -> str | None:
    import torch

    try:
        v = torch.cuda.nccl.version()
    except Exception:  # noqa: BLE001 - a build without NCCL
        return None
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def timing_check() -> dict[str, Any]:
    """The same kernel loop timed with CUDA events and with synchronize + perf_counter."""
    import torch

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ a
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(50):
        a @ a
    end.record()
    end.synchronize()
    events_s = start.elapsed_time(end) / 1e3
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(50):
        a @ a
    torch.cuda.synchronize()
    sync_s = time.perf_counter() - t0
    return {"events_s": events_s, "sync_s": sync_s, "tflops_events": 50 * 2 * 4096**3 / events_s / 1e12,
            "agree": abs(sync_s - events_s) / events_s < 0.10}


def allreduce_part(gpus: int, quick: bool) -> dict[str, Any]:
    if gpus < 2:
        return {"skipped": f"NCCL AllReduce needs ≥ 2 GPUs (one rank each); this machine has {gpus}"}
    from fedbw.collectives import parse_sizes
    from fedbw.collectives.allreduce import measure_allreduce

    ranks = min(gpus, 8)
    m = measure_allreduce("nccl", [ranks], parse_sizes("1K:64M:4" if quick else "1K:256M"), "float32",
                          iters=20, warmup=5, fabric="nvlink4", timeout_s=240)
    return m.to_json()


def step_part(gpus: int, quick: bool) -> dict[str, Any]:
    from fedbw.collectives.step import measure_step

    backend, ranks = ("nccl", min(gpus, 8)) if gpus >= 2 else ("gloo", 2)
    m = measure_step("resnet18", ranks, backend, device="cuda", batch_size=32, steps=3 if quick else 5, warmup=2,
                     timeout_s=240)
    return m.to_json()


def quickstart_part() -> dict[str, Any]:
    from fedbw.processes import Supervisor
    from fedbw.results.records import load_records
    from fedbw.results.summary import summarize_run_dir

    out = Path(tempfile.mkdtemp(prefix="fedbw-gpu-quickstart-"))
    argv = [sys.executable, "-m", "fedbw.cli", "run", str(ROOT / "experiments" / "quickstart.toml"),
            "--set", 'device="cuda"', "--set", f'output_dir="{out}"']
    t0 = time.perf_counter()
    with Supervisor() as sup:
        child = sup.start("quickstart", argv, dict(os.environ), out / "quickstart.log", stamp=False)
        code = child.wait(180.0)
    if code != 0:
        return {"error": child.describe_failure(f"exited with code {code}")}
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    env = json.loads((run_dir / "environment.json").read_text())
    s = summarize_run_dir(run_dir)
    clients, _ = load_records(run_dir)
    compute = [c.t_compute_s for c in clients if not c.dropped]
    return {"device": env.get("device"), "rounds": s.rounds, "mean_round_time_s": s.mean_round_time_s,
            "mean_client_compute_s": sum(compute) / len(compute) if compute else None,
            "final_accuracy": s.final_accuracy, "wall_s": time.perf_counter() - t0}


def _run(name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        out = fn()
    except Exception as exc:  # noqa: BLE001 - a failed part is reported, the others still run
        out = {"error": f"{exc.__class__.__name__}: {exc}"}
    out["part_s"] = time.perf_counter() - t0
    print(f"# {name}: {'error: ' + out['error'] if 'error' in out else out.get('skipped', 'done')} "
          f"({out['part_s']:.0f} s)", flush=True)
    return out


def write_docs() -> None:
    """Regenerate docs/'s tables from benchmarks/results/ (what `fedbw docs` does): the page shows the
    results at the default ``--out``."""
    from fedbw.report.docs import regenerate

    regenerate(ROOT)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and steps")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--write-docs", action="store_true", help="fill docs/gpu.md from the results")
    ap.add_argument("--docs-only", action="store_true", help="only rewrite docs/gpu.md from --out")
    args = ap.parse_args()
    out = Path(args.out)
    if args.docs_only:
        write_docs()
        print(f"# wrote the figures in {DOC} from {out}")
        return 0
    import torch

    if not torch.cuda.is_available():
        print(f"# GPU checks skipped: torch {torch.__version__} sees no CUDA device")
        return 0
    from fedbw.collectives.machine import machine_info

    gpus = torch.cuda.device_count()
    info = machine_info("cuda")
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    print(f"# fedbw GPU checks  {started}  {gpus} × {info['gpus'][0]}  torch {torch.__version__}  "
          f"CUDA {torch.version.cuda}", flush=True)
    data: dict[str, Any] = {"started": started, "machine": info, "cuda": torch.version.cuda, "nccl": nccl_version()}
    data["timing"] = _run("CUDA events vs synchronize", timing_check)
    data["allreduce"] = _run("NCCL AllReduce table", lambda: allreduce_part(gpus, args.quick))
    data["step"] = _run("DDP step on CUDA", lambda: step_part(gpus, args.quick))
    data["quickstart"] = _run("quickstart on CUDA", quickstart_part)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    from rich.console import Console

    from fedbw.report.datacenter import gpu_markdown

    Console(width=160).print(gpu_markdown(data), markup=False, highlight=False)
    print(f"# wrote {out}")
    if args.write_docs:
        write_docs()
        print(f"# wrote the figures in {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
