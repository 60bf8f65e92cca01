"""fedbw's own ServerApp and ClientApp as a Flower app directory, so ``flwr run`` can launch them.

The apps are installed in fedbw's environment; the directory holds only the metadata Flower needs and a
run config that names the plan file.
"""

from __future__ import annotations

from pathlib import Path

from fedbw.fl.settings import PLAN_KEY
from fedbw.tomlvalue import format_value

_PYPROJECT = """\
# Written by fedbw's emulate engine: Flower runs fedbw's own apps (installed in this environment).
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "fedbw-apps"
version = "1.0.0"
description = "fedbw's ServerApp and ClientApp, launched by fedbw run --engine emulate"
license = "Apache-2.0"
dependencies = []

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "fedbw"

[tool.flwr.app.components]
serverapp = "fedbw.fl.server_app:app"
clientapp = "fedbw.fl.client_app:app"

[tool.flwr.app.config]
{plan_key} = {plan_path}
"""


def write_fedbw_app(parent: Path, plan_path: Path) -> Path:
    """A Flower app directory whose components are fedbw's apps and whose run config names the plan."""
    app = parent / "fedbw-apps"
    app.mkdir(parents=True, exist_ok=True)
    (app / "pyproject.toml").write_text(
        _PYPROJECT.format(plan_key=format_value(PLAN_KEY), plan_path=format_value(str(plan_path))), encoding="utf-8")
    (app / "README.md").write_text("fedbw's apps, as a Flower app directory (generated).\n", encoding="utf-8")
    return app
