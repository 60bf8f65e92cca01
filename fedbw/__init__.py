"""fedbw: a federated-learning bandwidth lab.

Runs federated rounds over shaped home-broadband links and tells where the time and the bytes went,
beside what the same model would cost on a data-center fabric. From Python::

    import fedbw
    run = fedbw.estimate("experiments/quickstart.toml", set={"network.profile": "home-30"})
    run.rounds_frame()        # a pandas DataFrame (pip install "fedbw[pandas]")
    fedbw.load(run.run_dir)   # the same results, read back
"""

from typing import Any

__version__ = "0.2.0"

#: The Python API (fedbw.api), imported on first use so that ``import fedbw`` stays light.
__all__ = ["Run", "__version__", "estimate", "load", "resolve_config", "run"]


def __getattr__(name: str) -> Any:
    """The API's names, resolved at first use (PEP 562). Not an import of fedbw's own code: modules that
    import ``fedbw`` for ``__version__`` (the bottom layer) must not pull the runner and the engines in,
    so the facade names its module as a string (tests/test_imports.py reads the static imports)."""
    if name in ("Run", "estimate", "load", "resolve_config", "run"):
        import importlib

        return getattr(importlib.import_module("fedbw.api"), name)
    raise AttributeError(f"module 'fedbw' has no attribute {name!r}")
