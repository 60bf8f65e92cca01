"""The machine a measurement ran on, recorded beside it (a figure without its machine means nothing)."""

from __future__ import annotations

import os
from typing import Any

from fedbw.collectives.launch import usable_cores
from fedbw.errors import ConfigError
from fedbw.results.rundir import environment


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def gpu_names() -> list[str]:
    """Names of the CUDA devices torch sees (empty without CUDA)."""
    import torch

    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def require_gpus(gpus: int, what: str) -> None:
    """ConfigError unless ``gpus`` CUDA devices are visible (NCCL runs one rank per GPU)."""
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(f"{what} needs CUDA GPUs and torch sees none (torch {torch.__version__}); "
                          "use --backend gloo on CPU")
    if torch.cuda.device_count() < gpus:
        raise ConfigError(f"{what}: {gpus} ranks need {gpus} GPUs (one each), torch sees "
                          f"{torch.cuda.device_count()}; lower --ranks")


def machine_info(device: str) -> dict[str, Any]:
    """Versions, CPU, usable cores, load and (on ``cuda``) the GPUs."""
    info = environment(device)
    info.update({"cpu": cpu_model(), "usable_cores": usable_cores(), "loadavg_start": list(os.getloadavg()),
                 "gpus": gpu_names() if device == "cuda" else []})
    return info
