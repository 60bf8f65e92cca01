"""The data-center side: ``allreduce`` (the α-β model, or measured on torch.distributed ranks beside it)
and ``step`` (one DDP training step, its communication share and the remedies' effect)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Optional

import typer

from fedbw.cli.common import app, err, friendly, out
from fedbw.files.atomic import write_json_atomic

#: Where measured results go unless --out says otherwise (the runs directory, as for experiments).
RESULTS_DIR = Path("runs")


def _out_path(given: Optional[Path], stem: str) -> Path:
    path = given or RESULTS_DIR / f"{stem}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _progress(enabled: bool) -> tuple[Callable[[str], None], Callable[[], None]]:
    """A one-line status on stderr while ranks run (nothing when stderr is not a terminal)."""
    if not enabled or not err.is_terminal:
        return (lambda text: None), (lambda: None)
    status = err.status("starting ranks …")
    status.start()
    return status.update, status.stop


@app.command()
@friendly
def allreduce(model: Optional[str] = typer.Option(None, "--model", "-m", help="size from a model's gradient"),
              dtype_bytes: int = typer.Option(4, "--dtype-bytes", help="bytes per value with --model (2 = fp16)"),
              sizes: str = typer.Option("8:128M:4", "--sizes", help="size, begin:end or begin:end:factor (K = 2^10 B)"),
              fabric: str = typer.Option("ib-ndr400", "--fabric", "-f",
                                         help="fabric for the model (between nodes with --node-fabric)"),
              ranks: str = typer.Option("8", "--ranks", "-r", help="8, 2,4,8 or 2:1024"),
              algorithm: str = typer.Option("best", "--algorithm",
                                            help="best | ring | recursive-doubling | rabenseifner"),
              node_fabric: Optional[str] = typer.Option(None, "--node-fabric", help="intra-node fabric, e.g. nvlink4"),
              gpus_per_node: int = typer.Option(8, "--gpus-per-node"),
              backend: Optional[str] = typer.Option(None, "--backend", "-b",
                                                    help="measure on real ranks: gloo (CPU) or nccl (local GPUs)"),
              dtype: str = typer.Option("float32", "--dtype", "-d", help="float32 | bfloat16 | float16 (measured)"),
              iters: int = typer.Option(20, "--iters", "-n", help="timed iterations per size (nccl-tests -n)"),
              warmup: int = typer.Option(5, "--warmup-iters", "-w", help="warm-up iterations per size (nccl-tests -w)"),
              timeout: float = typer.Option(1800.0, "--timeout", help="seconds before the ranks are stopped"),
              out_file: Optional[Path] = typer.Option(None, "--out", "-o", help="JSON file for the measured table"),
              json_out: bool = typer.Option(False, "--json")) -> None:
    """AllReduce printed like nccl-tests: the α-β model, or with --backend measured on real ranks beside it."""
    from fedbw.collectives import allreduce_rows, parse_ranks, parse_sizes

    if model:
        from fedbw.catalog import get_model

        size_list = [get_model(model).params * dtype_bytes]
    else:
        size_list = parse_sizes(sizes)
    rank_list = parse_ranks(ranks)
    if backend is None:
        rows = allreduce_rows(size_list, rank_list, fabric, algorithm, node_fabric, gpus_per_node)
        if json_out:
            out.print_json(json.dumps([asdict(r) for r in rows]))
            return
        from fedbw.report.datacenter import render_allreduce

        render_allreduce(out, rows)
        return
    from fedbw.collectives import parse_dtype
    from fedbw.collectives.allreduce import measure_allreduce

    update, stop = _progress(not json_out)
    try:
        m = measure_allreduce(backend, rank_list, size_list, parse_dtype(dtype), iters=iters, warmup=warmup,
                              fabric=fabric, algorithm=algorithm, node_fabric=node_fabric,
                              gpus_per_node=gpus_per_node, timeout_s=timeout,
                              on_progress=lambda p, msg: update(f"{p} ranks · {msg['size_bytes']:,} B "
                                                                f"({msg['done']}/{msg['of']})"))
    finally:
        stop()
    data = m.to_json()
    path = _out_path(out_file, f"allreduce-{backend}")
    write_json_atomic(path, data)  # whole or not at all: a full disk never leaves half a result
    if json_out:
        out.print_json(json.dumps(data))
        return
    from fedbw.report.datacenter import render_allreduce_measured

    render_allreduce_measured(out, m)
    out.print(f"JSON: {path}")


@app.command()
@friendly
def step(model: str = typer.Option("resnet18", "--model", "-m", help="catalog model with a torch module"),
         ranks: int = typer.Option(2, "--ranks", "-r", help="DDP ranks (NCCL: one GPU each)"),
         backend: str = typer.Option("gloo", "--backend", "-b", help="gloo (CPU) or nccl (local GPUs)"),
         device: Optional[str] = typer.Option(None, "--device", help="cpu | cuda (default: cuda with nccl)"),
         batch_size: int = typer.Option(4, "--batch-size", help="samples per rank and micro-batch"),
         steps: int = typer.Option(3, "--steps", help="timed (and profiled) steps per variant"),
         warmup: int = typer.Option(2, "--warmup", help="warm-up steps per variant (at least 2)"),
         accumulate: int = typer.Option(4, "--accumulate", "-k", help="micro-batches per sync (accumulate variant)"),
         powersgd_rank: int = typer.Option(2, "--powersgd-rank", help="PowerSGD matrix approximation rank"),
         variants: Optional[str] = typer.Option(None, "--variants",
                                                help="comma list of no-comm,overlap,no-overlap,accumulate,fp16,"
                                                     "powersgd (default: all)"),
         model_ranks: int = typer.Option(8, "--model-ranks", help="ranks in the modelled table"),
         model_batch: int = typer.Option(32, "--model-batch-size", help="batch per rank in the modelled table"),
         device_profile: str = typer.Option("dc-gpu", "--device-profile", help="compute in the modelled table"),
         fabric: list[str] = typer.Option([], "--fabric", "-f", help="fabric(s) to model (default: five)"),
         profile: list[str] = typer.Option([], "--profile", "-p", help="uplink profile(s) to model"),
         timeout: float = typer.Option(1800.0, "--timeout", help="seconds before the ranks are stopped"),
         out_file: Optional[Path] = typer.Option(None, "--out", "-o", help="JSON file for the result"),
         json_out: bool = typer.Option(False, "--json")) -> None:
    """One DDP training step: compute, AllReduce and exposed communication, the remedies' effect, and the model."""
    from fedbw.collectives.step import COMM_SHARE_LINE, measure_step

    chosen = [v.strip() for v in variants.split(",") if v.strip()] if variants else None
    update, stop = _progress(not json_out)
    try:
        m = measure_step(model, ranks, backend, batch_size=batch_size, steps=steps, warmup=warmup,
                         accumulate=accumulate, powersgd_rank=powersgd_rank, variants=chosen, model_ranks=model_ranks,
                         model_batch_size=model_batch, device_profile=device_profile, fabrics=fabric or None,
                         uplinks=profile or None, device=device, timeout_s=timeout,
                         on_progress=lambda msg: update(f"{msg['variant']} done ({msg['done']}/{msg['of']})"))
    finally:
        stop()
    data = m.to_json()
    path = _out_path(out_file, f"step-{model}-{backend}")
    write_json_atomic(path, data)  # whole or not at all: a full disk never leaves half a result
    if json_out:
        out.print_json(json.dumps(data))
        return
    from fedbw.report.datacenter import render_step

    render_step(out, m, COMM_SHARE_LINE)
    out.print(f"JSON: {path}")
