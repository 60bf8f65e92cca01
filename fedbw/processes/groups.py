"""Process groups on this machine, through psutil: who is in a group, who descends from whom, memory.

Why groups: a Flower SuperLink or SuperNode starts a SuperExec, which starts one process per run or
message; Ray starts a GCS, a raylet and actors. Signalling only the PID fedbw started would orphan
them; every child fedbw starts runs in a session of its own, so its group reaches them all. Some
descendants detach into sessions of their own (Flower's SuperExec): their groups are found by walking
descendants while the parent lives, and are stopped too.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable

import psutil


def _pgid(proc: psutil.Process) -> int | None:
    try:
        return os.getpgid(proc.pid)
    except (ProcessLookupError, PermissionError):
        return None


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def group_members(pgid: int) -> list[psutil.Process]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    return [p for p in psutil.process_iter() if _pgid(p) == pgid and _alive(p)]


def group_alive(pgid: int) -> bool:
    return any(True for _ in group_members(pgid))


def descendant_groups(roots: Iterable[int]) -> set[int]:
    """Process groups of every live descendant of ``roots`` (ours excluded), including descendants that
    started a session of their own."""
    groups: set[int] = set()
    for pid in roots:
        try:
            kids = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for kid in kids:
            if _alive(kid) and (g := _pgid(kid)) is not None:
                groups.add(g)
    groups.discard(os.getpgrp())
    return groups


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def wait_groups_gone(groups: set[int], timeout_s: float) -> set[int]:
    """Wait until no live process is left in ``groups``; returns those still alive after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    live = {g for g in groups if group_alive(g)}
    while live and time.monotonic() < deadline:
        time.sleep(0.05)
        live = {g for g in live if group_alive(g)}
    return live


def group_exists(pgid: int) -> bool:
    """Whether the kernel still knows the group (zombies included: not yet reaped by their parent)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_groups_reaped(groups: set[int], timeout_s: float) -> None:
    """After SIGKILL: wait (bounded) until the kernel has forgotten the groups, zombies reaped."""
    deadline = time.monotonic() + timeout_s
    while any(group_exists(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(0.02)


def stop_groups(groups: set[int], grace_s: float, first: int = signal.SIGTERM) -> set[int]:
    """``first`` to every group, ``grace_s`` to leave, then SIGKILL; returns groups that survived even that."""
    live = {g for g in groups if group_alive(g)}
    for sig, wait_s in ((first, grace_s), (signal.SIGKILL, 5.0)):
        for g in live:
            signal_group(g, sig)
        live = wait_groups_gone(live, wait_s)
        if not live:
            break
    wait_groups_reaped(set(groups), 2.0)
    return live


def groups_rss_bytes(groups: Iterable[int]) -> int:
    """Resident memory of every live process in ``groups``, summed."""
    wanted = set(groups)
    total = 0
    for p in psutil.process_iter():
        if _pgid(p) in wanted:
            try:
                total += p.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
    return total


def groups_run(groups: Iterable[int], needles: tuple[bytes, ...]) -> set[int]:
    """The groups among ``groups`` with a live process whose command line contains one of ``needles``
    (a remembered group id could in principle have been reused by an unrelated process)."""
    wanted, hits = set(groups), set()
    for p in psutil.process_iter():
        g = _pgid(p)
        if g in wanted and g not in hits and _alive(p):
            try:
                cmd = " ".join(p.cmdline()).encode()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            if any(n in cmd for n in needles):
                hits.add(g)
    return hits
