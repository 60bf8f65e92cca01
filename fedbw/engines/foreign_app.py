"""Any Flower app, as fedbw runs it: the app directory's checks (no import of its code), the federation
it runs in (its plan), and the wrapped copy Flower's Deployment Engine launches.

Why a wrapped copy: fedbw measures an app it did not write by wrapping its ServerApp and ClientApp
(:mod:`fedbw.fl.foreign`). In the Simulation Engine fedbw holds the app objects and wraps them in
memory; the Deployment Engine loads components by name from the app directory it ships to every
SuperNode. So fedbw copies the directory, adds one module whose components wrap the app's own, and
points the copy's ``[tool.flwr.app.components]`` at them. The user's directory is never touched.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

from fedbw.errors import ConfigError


def read_app(app_dir: Path) -> dict[str, Any]:
    """The app's ``[tool.flwr.app]`` table; ConfigError unless ``app_dir`` is a Flower app directory."""
    py = app_dir / "pyproject.toml"
    if not py.is_file():
        raise ConfigError(f"{app_dir} has no pyproject.toml; pass a Flower app directory (one with "
                          f"[tool.flwr.app] in its pyproject.toml)")
    try:
        data = tomllib.loads(py.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{py}: not valid TOML ({exc})") from None
    app = data.get("tool", {}).get("flwr", {}).get("app")
    if not isinstance(app, dict):
        raise ConfigError(f"{py} has no [tool.flwr.app] section; is this a Flower app?")
    return app


def check_app_dir(app_dir: Path) -> None:
    """ConfigError unless ``app_dir`` is a Flower app directory (pyproject.toml with [tool.flwr.app])."""
    read_app(app_dir)


def client_component(app_dir: Path) -> str:
    """The app's ClientApp reference (``module:attr``)."""
    ref = read_app(app_dir).get("components", {}).get("clientapp")
    if not isinstance(ref, str) or ":" not in ref:
        raise ConfigError(f"{app_dir / 'pyproject.toml'}: [tool.flwr.app.components] needs clientapp = \"module:attr\"")
    return ref


def server_component(app_dir: Path) -> str:
    """The app's ServerApp reference (``module:attr``)."""
    ref = read_app(app_dir).get("components", {}).get("serverapp")
    if not isinstance(ref, str) or ":" not in ref:
        raise ConfigError(f"{app_dir / 'pyproject.toml'}: [tool.flwr.app.components] needs serverapp = \"module:attr\"")
    return ref


def app_plan(num_clients: int, profile: str, *, seed: int = 0, server_link: str | None = None,
             calibration: str | None = None, framework: str = "flower-deployment", output_dir: str = "runs",
             name: str = "app", engine: str = "simulate", emulate: dict[str, Any] | None = None) -> Any:
    """The federation an app runs in: ``num_clients`` on ``profile`` links, all taking part each round
    (the app's own strategy decides who trains), the server link and Flower's calibrated costs."""
    from fedbw.config import config_from_dict
    from fedbw.plan import build_plan

    if num_clients < 1:
        raise ConfigError(f"--clients must be at least 1, got {num_clients}")
    data: dict[str, Any] = {
        "name": name, "engine": engine, "seed": seed, "output_dir": output_dir, "framework": framework,
        # model and compute only size the plan's own (unused) training; the app brings its own
        "model": {"name": "mlp"}, "clients": {"total": num_clients, "per_round": num_clients, "compute": "synthetic"},
        "network": {"profile": profile}, "deployment": {"calibration": calibration}}
    if server_link is not None:
        data["server"] = {"link": server_link}
    if emulate:
        data["emulate"] = dict(emulate)
    return build_plan(config_from_dict(data, source=f"fedbw {engine} --app"), device="cpu")


#: Environment the wrapped ServerApp reads (it runs in a process Flower starts).
EVENTS_ENV = "FEDBW_EVENTS"
NODES_ENV = "FEDBW_NUM_NODES"
WRAPPER_MODULE = "fedbw_measured"
_WRAPPER = """\
# Written by fedbw: the app's own components, wrapped so that every message is measured.
import os
from pathlib import Path

from fedbw.fl.foreign import MeasuredClientApp, MeasuredServerApp, load_component

_HERE = Path(__file__).resolve().parent
server_app = MeasuredServerApp(load_component({server!r}, "serverapp", _HERE), Path(os.environ[{events!r}]),
                               int(os.environ[{nodes!r}]))
client_app = MeasuredClientApp(load_component({client!r}, "clientapp", _HERE))
"""
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".git", ".venv", "venv", ".mypy_cache", ".pytest_cache")


def wrapped_copy(app_dir: Path, parent: Path) -> Path:
    """A copy of ``app_dir`` under ``parent`` whose components are fedbw's wrappers of the app's own."""
    server, client = server_component(app_dir), client_component(app_dir)
    dst = parent / f"{app_dir.name}-measured"
    shutil.copytree(app_dir, dst, ignore=_IGNORE)
    (dst / f"{WRAPPER_MODULE}.py").write_text(
        _WRAPPER.format(server=server, client=client, events=EVENTS_ENV, nodes=NODES_ENV), encoding="utf-8")
    py = dst / "pyproject.toml"
    text = py.read_text(encoding="utf-8")
    for key, attr in (("serverapp", "server_app"), ("clientapp", "client_app")):
        text, n = re.subn(rf'(?m)^(\s*{key}\s*=\s*)"[^"]*"', rf'\g<1>"{WRAPPER_MODULE}:{attr}"', text)
        if n != 1:
            raise ConfigError(f"{py}: cannot point {key} at fedbw's wrapper (expected one `{key} = \"…\"` line)")
    py.write_text(text, encoding="utf-8")
    return dst
