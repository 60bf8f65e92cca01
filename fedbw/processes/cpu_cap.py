"""CPU caps per emulated device: a cgroup per device whose processes together get at most a share of
one core (cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``).

Why: under time dilation by K an emulated device should compute as fast as one real core (times its
profile's ``cpu_speed``) *in emulated time*, i.e. 1/K of a core in real time — DieCast's CPU scaling.
Without a cap a lone ClientApp would get a whole core, K times more than its share, and CPU work
would look K times cheaper than on the device. Caps need write access to the cgroup file system (root
in a container, or a delegated cgroup); :func:`cgroup_root` says where, or why not. The groups also
carry a high CPU weight, so that other work on the host does not take a device's share from it.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

#: The accounting period of a cap: the kernel's default. A capped group runs its quota, then sleeps for
#: the rest of the period, so a shorter period looks smoother; measured, it is worse: with 10 ms, a
#: device capped at 1/7 of a core got 1.4 ms of quota per period (under the kernel's 5 ms bandwidth
#: slice, which probably leaves the group's other threads waiting), and ResNet-18
#: downloads at K = 7 ran 7.6 s against 4.4 s with 100 ms (benchmarks/agreement.py, 2026-12-01).
PERIOD_US = 100_000
V2_ROOT = Path("/sys/fs/cgroup")
V1_CPU = Path("/sys/fs/cgroup/cpu")


@dataclass(frozen=True)
class CgroupRoot:
    """Where device groups are made, and which interface (2: cpu.max, 1: cpu.cfs_quota_us)."""

    path: Path
    version: int


def cgroup_root() -> CgroupRoot | str:
    """A writable cgroup directory with the cpu controller, or the reason there is none."""
    own = _own_v2_group()
    if own is not None and (own / "cgroup.controllers").exists():
        controllers = (own / "cgroup.controllers").read_text().split()
        if "cpu" in controllers and os.access(own, os.W_OK):
            return CgroupRoot(own, 2)
    if (V1_CPU / "cpu.cfs_quota_us").exists():
        if os.access(V1_CPU, os.W_OK):
            return CgroupRoot(V1_CPU, 1)
        return f"{V1_CPU} is not writable (run as root or delegate a cgroup)"
    return "no cgroup cpu controller is mounted and writable here"


def _own_v2_group() -> Path | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                rel = line[3:].strip().lstrip("/")
                unified = V2_ROOT / "unified" if (V2_ROOT / "unified" / "cgroup.procs").exists() else V2_ROOT
                return unified / rel if rel else unified
    except OSError:
        return None
    return None


@dataclass
class CpuGroup:
    """One device's cgroup: its quota and the processes placed in it (children inherit the group)."""

    path: Path
    version: int
    cores: float  #: the cap, in cores of this host
    acct: Path | None = None  #: v1: the sibling group in the cpuacct hierarchy that counts CPU time
    pids: list[int] = field(default_factory=list)

    def add(self, pid: int) -> None:
        """Place ``pid`` in the group; the processes it starts from now on are in it too."""
        (self.path / "cgroup.procs").write_text(f"{pid}\n")
        if self.acct is not None:
            (self.acct / "cgroup.procs").write_text(f"{pid}\n")
        self.pids.append(pid)

    def cpu_seconds(self) -> float | None:
        """CPU time used so far by every process that ran in the group (None: not counted here)."""
        if self.version == 2:
            for line in (self.path / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec"):
                    return int(line.split()[1]) / 1e6
            return None
        if self.acct is not None and (self.acct / "cpuacct.usage").exists():
            return int((self.acct / "cpuacct.usage").read_text()) / 1e9
        return None

    def throttled_s(self) -> float:
        """Time the group's processes waited for the quota (they wanted more than their share)."""
        key = "throttled_usec" if self.version == 2 else "throttled_time"
        for line in (self.path / "cpu.stat").read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value) / (1e6 if self.version == 2 else 1e9)
        return 0.0


class CpuCaps:
    """Makes one capped group per device under a private parent group and removes them all at close.

    Processes still in a group at close are moved back to the parent's parent first (a cgroup with
    members cannot be removed); fedbw stops its processes before it closes the caps.
    """

    def __init__(self, root: CgroupRoot) -> None:
        self.root = root
        self.parent = root.path / f"fedbw-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.parent.mkdir()
        if root.version == 2:
            try:
                (self.parent / "cgroup.subtree_control").write_text("+cpu\n")
            except OSError:
                pass
        _prefer(self.parent, root.version)
        self.groups: dict[str, CpuGroup] = {}
        self._cpuacct = Path(str(self.parent).replace("/cpu/", "/cpuacct/", 1)) if root.version == 1 else None
        if self._cpuacct is not None and self._cpuacct.parent.exists() and os.access(self._cpuacct.parent, os.W_OK):
            self._cpuacct.mkdir(exist_ok=True)
        else:
            self._cpuacct = None

    def group(self, name: str, cores: float, period_us: int = PERIOD_US) -> CpuGroup:
        """A new group named ``name`` capped at ``cores`` cores (e.g. 1/K, or cpu_speed/K) over accounting
        periods of ``period_us`` (emulate's: :data:`PERIOD_US`; benchmarks/cpu_cap.py tries others)."""
        if not cores > 0:
            raise ValueError(f"a CPU cap must be > 0 cores, got {cores}")
        path = self.parent / name
        path.mkdir()
        quota = max(1000, int(round(cores * period_us)))
        if self.root.version == 2:
            (path / "cpu.max").write_text(f"{quota} {period_us}\n")
        else:
            (path / "cpu.cfs_period_us").write_text(f"{period_us}\n")
            (path / "cpu.cfs_quota_us").write_text(f"{quota}\n")
            if self._cpuacct is not None:
                (self._cpuacct / name).mkdir(exist_ok=True)
        group = CpuGroup(path, self.root.version, cores, acct=self._cpuacct / name if self._cpuacct else None)
        self.groups[name] = group
        return group

    def close(self) -> None:
        for group in self.groups.values():
            for base in (group.path, group.acct):
                if base is None or not base.exists():
                    continue
                _evacuate(base, base.parent.parent)
                try:
                    base.rmdir()
                except OSError:
                    pass
        for base in (self.parent, self._cpuacct):
            if base is not None and base.exists():
                _evacuate(base, base.parent)
                try:
                    base.rmdir()
                except OSError:
                    pass

    def __enter__(self) -> CpuCaps:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: The emulation's groups outweigh other work on the host (100 × a default process group's weight, the
#: most cgroup v2 allows): a cap is an upper bound only, and under other load a device should still get
#: its whole share. The caps keep this from starving the host: a group never runs past its quota.
WEIGHT_FACTOR = 100


def _prefer(group: Path, version: int) -> None:
    try:
        if version == 2:
            (group / "cpu.weight").write_text(f"{100 * WEIGHT_FACTOR}\n")
        else:
            (group / "cpu.shares").write_text(f"{1024 * WEIGHT_FACTOR}\n")
    except OSError:
        pass  # a weight is a preference; without it the caps still hold


def _evacuate(group: Path, to: Path) -> None:
    procs = group / "cgroup.procs"
    if not procs.exists():
        return
    for pid in procs.read_text().split():
        try:
            (to / "cgroup.procs").write_text(f"{pid}\n")
        except OSError:
            pass
