"""The ``fedbw`` command line: parse, call one function, render. No logic lives here.

Commands are grouped by what they touch (`fedbw --help` lists them in the order a user needs them:
:data:`.common.COMMAND_ORDER`): :mod:`.experiments` (configs: validate, run, sweep, study),
:mod:`.results` (report, compare), :mod:`.analytic` (estimate, profiles, models),
:mod:`.datacenter` (allreduce, step), :mod:`.deployment` (emulate, shape); :mod:`.common` holds the app,
consoles and error handling.
"""

from fedbw.cli import analytic, datacenter, deployment, experiments, results, traces  # noqa: F401 - registers the commands
from fedbw.cli.common import app


def main() -> None:  # console-script entry point
    app()


__all__ = ["app", "main"]
