"""A count of everything a run started: processes, open file descriptors, threads, resident memory.

Why by a marker in the environment: Flower's SuperExec detaches into a session of its own and Ray's
workers are children of a raylet, so walking the tree from fedbw's own process misses some of them
(and those are the ones that leak). Every process inherits its parent's environment, so a variable
set in fedbw's process before the run (:func:`mark_this_process`) finds all its descendants on
/proc, wherever they were re-parented, and no process of anyone else on the host. Used by the soak
benchmark per round and by the tests that check nothing is left after a run.
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

MARKER_ENV = "FEDBW_CENSUS_MARK"
#: Command-line fragments of processes that live for one message, not for the run.
SHORT_LIVED = ("flwr-clientapp",)


def mark_this_process(marker: str | None = None) -> str:
    """Set the marker every process started from now on inherits; returns it."""
    marker = marker or uuid.uuid4().hex
    os.environ[MARKER_ENV] = marker
    return marker


def marked_pids(marker: str) -> list[int]:
    """Live (non-zombie) processes other than this one whose environment carries ``marker``."""
    needle = f"{MARKER_ENV}={marker}\0".encode()
    me = os.getpid()
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if needle not in (entry / "environ").read_bytes() + b"\0":
                continue
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2] != "Z":
            out.append(int(entry.name))
    return out


@dataclass(frozen=True)
class Census:
    """One look at this process and every marked one."""

    processes: int  #: marked processes alive (this one not counted)
    fds: int  #: open file descriptors of all marked processes
    threads: int  #: threads of all marked processes
    rss_bytes: int  #: resident memory of all marked processes
    short_lived: int  #: of those, processes that live for one message (Flower's ClientApps)
    rss_long_lived_bytes: int  #: resident memory of the others: SuperLink, SuperNodes, shaper, ServerApp
    own_fds: int  #: this process's open file descriptors
    own_threads: int  #: this process's threads (Python threads, as ``threading`` sees them)
    own_rss_bytes: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def take_census(marker: str) -> Census:
    """Count the marked processes and this one (processes that vanish meanwhile are skipped)."""
    fds = threads = rss = n = short = rss_long = 0
    for pid in marked_pids(marker):
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                f, t, r = proc.num_fds(), proc.num_threads(), proc.memory_info().rss
                cmd = " ".join(proc.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        n += 1
        fds += f
        threads += t
        rss += r
        if any(s in cmd for s in SHORT_LIVED):
            short += 1
        else:
            rss_long += r
    me = psutil.Process()
    return Census(processes=n, fds=fds, threads=threads, rss_bytes=rss, short_lived=short,
                  rss_long_lived_bytes=rss_long, own_fds=me.num_fds(),
                  own_threads=threading.active_count(), own_rss_bytes=me.memory_info().rss)
