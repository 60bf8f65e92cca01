"""CPU caps per emulated device (cgroups): a capped process gets its share of a core and no more."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from fedbw.processes.cpu_cap import CpuCaps, cgroup_root

ROOT = cgroup_root()
needs_cgroups = pytest.mark.skipif(isinstance(ROOT, str), reason=f"no writable cgroup here: {ROOT}")

BURN = "import time\nt = time.perf_counter()\nwhile time.perf_counter() - t < 1.0: pass\n"


@needs_cgroups
def test_a_capped_process_gets_its_share_and_the_groups_go_at_close() -> None:
    with CpuCaps(ROOT) as caps:  # type: ignore[arg-type]
        group = caps.group("dev-0", 0.2)
        # started paused in the group, so all its work is capped: python -c waits for stdin first
        proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()\n" + BURN],
                                stdin=subprocess.PIPE, text=True)
        group.add(proc.pid)
        t0 = time.perf_counter()
        proc.communicate("go\n", timeout=30)
        wall = time.perf_counter() - t0
        used = group.cpu_seconds()
        assert wall >= 0.95
        if used is not None:
            assert used <= 0.2 * wall + 0.15, f"{used:.2f} CPU-s in {wall:.2f} s at a 0.2-core cap"
        assert group.throttled_s() > 0.3
        parent = caps.parent
    assert not parent.exists()


@needs_cgroups
def test_a_cap_must_be_positive() -> None:
    with CpuCaps(ROOT) as caps:  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="must be > 0 cores"):
            caps.group("dev-x", 0.0)


def test_without_cgroups_the_reason_is_given(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # noqa: ANN001
    import fedbw.processes.cpu_cap as cc

    monkeypatch.setattr(cc, "V1_CPU", tmp_path / "none")
    monkeypatch.setattr(cc, "_own_v2_group", lambda: None)
    assert "no cgroup cpu controller" in cc.cgroup_root()
