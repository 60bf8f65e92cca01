"""The device a run trains on: resolved once, an error when CUDA is asked for and absent."""

import pytest

from fedbw.device import describe_device, resolve_device
from fedbw.errors import ConfigError


def test_device_resolution(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    assert resolve_device("cpu") == "cpu" and describe_device("cpu") == "cpu"
    with pytest.raises(ConfigError, match="cuda"):
        resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"
