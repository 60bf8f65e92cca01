"""The torch device a run trains on, resolved once (by the runner) and carried by the plan.

torch is imported only here and only when a run needs a device: the analytic engine never pays for it.
"""

from __future__ import annotations

from fedbw.errors import ConfigError


def resolve_device(requested: str) -> str:
    """``auto`` → ``cuda`` when a GPU is visible, else ``cpu``; asking for cuda without one is an error."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise ConfigError('device = "cuda" but torch sees no GPU; use device = "auto" or "cpu"')
    return requested


def describe_device(device: str) -> str:
    """What environment.json records: ``cpu``, or ``cuda (<GPU name>)``."""
    if device == "cuda":
        import torch

        return f"cuda ({torch.cuda.get_device_name(0)})"
    return device
