"""`fedbw allreduce` (the model alone, or measured with --backend) and `fedbw step` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from fedbw.cli import app

runner = CliRunner()


def test_model_only_allreduce_is_unchanged() -> None:
    res = runner.invoke(app, ["allreduce", "--fabric", "eth-1g", "--ranks", "2,8", "--sizes", "1K:1M:32"])
    assert res.exit_code == 0, res.output
    assert "α-β model" in res.output and "eth-1g" in res.output and "1,048,576" in res.output
    res = runner.invoke(app, ["allreduce", "--model", "resnet18", "--ranks", "8", "--json"])
    (row,) = json.loads(res.output)
    assert row["size_bytes"] == 4 * 11_689_512 and row["ranks"] == 8


def test_begin_end_sizes_without_a_factor() -> None:
    res = runner.invoke(app, ["allreduce", "--ranks", "2", "--sizes", "1K:64M", "--json"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.output)) == 17


@pytest.mark.parametrize("args, needle", [
    (["allreduce", "--sizes", "1K:banana"], "--sizes"),
    (["allreduce", "--backend", "mpi", "--sizes", "1K"], "gloo or nccl"),
    (["allreduce", "--backend", "gloo", "--dtype", "int8", "--sizes", "1K"], "--dtype"),
    (["allreduce", "--backend", "gloo", "--ranks", "1"], "≥ 2"),
    (["allreduce", "--backend", "gloo", "--ranks", "2", "--sizes", "1K", "--iters", "0"], "--iters"),
    (["allreduce", "--backend", "gloo", "--ranks", "2", "--sizes", "1K", "--fabric", "eth-3g"], "eth-1g"),
    (["step", "--model", "llm-7b"], "no torch module"),
    (["step", "--model", "mlp", "--ranks", "1"], "--ranks"),
    (["step", "--model", "mlp", "--variants", "overlap,zip"], "--variants"),
    (["step", "--model", "mlp", "--accumulate", "1"], "--accumulate"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present")
def test_nccl_without_a_gpu_says_so() -> None:
    res = runner.invoke(app, ["allreduce", "--backend", "nccl", "--ranks", "2", "--sizes", "1K"])
    assert res.exit_code == 2 and "needs CUDA GPUs" in res.output


@pytest.mark.slow
def test_measured_allreduce_table_fit_and_json(tmp_path: Path) -> None:
    out = tmp_path / "ar.json"
    res = runner.invoke(app, ["allreduce", "--backend", "gloo", "--ranks", "2", "--sizes", "1K:16K:4", "--iters", "2",
                              "--warmup-iters", "1", "--fabric", "eth-1g", "--out", str(out)])
    assert res.exit_code == 0, res.output
    for needle in ("AllReduce measured", "#wrong", "busbw", "model", "fit at 2 ranks", "α =", "CPU-bound",
                   "Out of bounds values : 0 OK", str(out)):
        assert needle in res.output
    data = json.loads(out.read_text())
    assert data["backend"] == "gloo" and [r["size_bytes"] for r in data["tables"][0]["rows"]] == [1024, 4096, 16384]
    assert data["tables"][0]["fit"]["points"] == 3 and data["tables"][0]["bound"] == "cpu"


@pytest.mark.slow
def test_step_prints_share_remedies_and_model(tmp_path: Path) -> None:
    out = tmp_path / "step.json"
    res = runner.invoke(app, ["step", "--model", "mlp", "--ranks", "2", "--steps", "1", "--warmup", "1",
                              "--profile", "home-30", "--fabric", "ib-ndr400", "--out", str(out)])
    assert res.exit_code == 0, res.output
    for needle in ("DDP step measured", "communication share", "30 % line", "fp16 comm hook", "PowerSGD",
                   "accumulate ×4", "The same step modelled", "home-30", "ib-ndr400"):
        assert needle in res.output
    assert json.loads(out.read_text())["kind"] == "step"


def test_the_model_alone_never_imports_torch() -> None:
    import subprocess
    import sys

    code = ("import sys; from typer.testing import CliRunner; from fedbw.cli import app; "
            "r = CliRunner().invoke(app, ['allreduce', '--ranks', '2', '--sizes', '1K:1M']); "
            "print(r.exit_code, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout.split()
    assert out == ["0", "False"]
