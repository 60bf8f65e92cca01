"""What a dilated emulation adds to its Flower processes' environment: the dilation itself and the
folder whose ``sitecustomize`` installs :mod:`fedbw.timewarp.hook` before Flower is imported."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from fedbw.timewarp import Dilation

SITE_DIR = Path(__file__).resolve().parent / "site"


def env_additions(dilation: Dilation, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables to set in a dilated process's environment (none for an undilated run): the
    dilation, and PYTHONPATH with the launcher's site folder first (``base``'s PYTHONPATH after it)."""
    if not dilation.active:
        return {}
    rest = (os.environ if base is None else base).get("PYTHONPATH", "")
    return {**dilation.env(), "PYTHONPATH": str(SITE_DIR) + (os.pathsep + rest if rest else "")}
