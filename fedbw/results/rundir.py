"""Run directories: every run leaves its resolved config, its environment and its records."""

from __future__ import annotations

import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from fedbw.config import ExperimentConfig, config_to_dict


def new_run_dir(cfg: ExperimentConfig, engine: str) -> Path:
    """A fresh directory ``<output_dir>/<name>-<engine>-<UTC stamp>``."""
    return fresh_stamped_dir(Path(cfg.output_dir), f"{cfg.name}-{engine}")


def fresh_stamped_dir(parent: Path, stem: str) -> Path:
    """Create ``<parent>/<stem>-<UTC stamp>``, suffixed -2, -3… when runs start in the same second."""
    base = Path(parent) / f"{stem}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    path.mkdir(parents=True)
    return path


def environment(device: str | None = None) -> dict[str, Any]:
    """Versions and hardware a result depends on."""
    versions = {}
    for pkg in ("fedbw", "flwr", "torch", "numpy", "cryptography", "ray", "dp-accounting"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    import os

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "device": device,
        "packages": versions,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_run_metadata(run_dir: Path, cfg: ExperimentConfig, device: str | None = None) -> None:
    from fedbw.files.atomic import write_json_atomic

    # whole or not at all: a full disk must not leave a 0-byte resolved_config.json behind
    write_json_atomic(run_dir / "resolved_config.json", config_to_dict(cfg), indent=2)
    write_json_atomic(run_dir / "environment.json", environment(device), indent=2)
