"""emulate.cap_period_ms: the devices' CPU caps account over the configured period (docs/fidelity.md compares
100 and 400 ms), and the emulation says which period its caps had."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from fedbw.config.sections import EmulateConfig
from fedbw.engines.emulate.federation import _cpu_groups
from fedbw.processes.cpu_cap import PERIOD_US, cgroup_root
from fedbw.timewarp import Dilation

ROOT = cgroup_root()
needs_cgroups = pytest.mark.skipif(isinstance(ROOT, str), reason=f"no writable cgroup here: {ROOT}")


def _period_us(path) -> int:  # noqa: ANN001
    if (path / "cpu.max").exists():
        return int((path / "cpu.max").read_text().split()[1])
    return int((path / "cpu.cfs_period_us").read_text())


@needs_cgroups
@pytest.mark.parametrize("period_ms", [100, 400])
def test_every_group_of_an_emulation_accounts_over_the_configured_period(period_ms: int) -> None:
    clients = [SimpleNamespace(client_id=0, cpu_speed=1.0), SimpleNamespace(client_id=1, cpu_speed=0.5)]
    with contextlib.ExitStack() as stack:
        caps, groups, note = _cpu_groups(stack, clients, Dilation(4.0), True, period_ms * 1000)  # type: ignore[arg-type]
        assert caps is not None and note is None
        assert {_period_us(g.path) for g in groups.values()} == {period_ms * 1000}
        if (groups[1].path / "cpu.max").exists():  # a device at half speed: 1/8 of a core of every period
            assert int((groups[1].path / "cpu.max").read_text().split()[0]) == period_ms * 1000 // 8


def test_the_default_period_is_the_kernels_and_bounds_are_enforced() -> None:
    assert EmulateConfig().cap_period_ms * 1000 == PERIOD_US
    for bad in (5, 2000):
        with pytest.raises(ValidationError, match="cap_period_ms"):
            EmulateConfig(cap_period_ms=bad)
