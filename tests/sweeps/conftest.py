"""A sweep whose point fails: the runner raises RunError for the point named ``<config>-p<N>``."""

import pytest

import fedbw.runner
from fedbw.errors import RunError


@pytest.fixture
def fail_point(monkeypatch):
    """Call with a point's index: that point's run raises RunError("link exploded" + log lines), the others run."""

    def arm(point: int) -> None:
        real = fedbw.runner.run_experiment

        def run(cfg, progress):
            if cfg.name.endswith(f"-p{point}"):
                # an engine's error carries the last lines of its log, a traceback among them
                raise RunError("link exploded\n--- child.log (last lines) ---\nTraceback (most recent call last):")
            return real(cfg, progress)

        monkeypatch.setattr(fedbw.runner, "run_experiment", run)

    return arm
