"""The census finds every process a run started (by the marker they inherit), also detached ones."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from fedbw.processes.census import MARKER_ENV, mark_this_process, marked_pids, take_census


def test_marked_processes_are_counted_wherever_they_were_reparented(monkeypatch) -> None:
    monkeypatch.delenv(MARKER_ENV, raising=False)
    marker = mark_this_process()
    try:
        # a child that starts a grandchild in a session of its own and exits: the grandchild is re-parented
        code = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'], "
                "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        grandchild = int(out.stdout.split()[0])
        deadline = time.monotonic() + 10
        while grandchild not in marked_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        census = take_census(marker)
        assert marked_pids(marker) == [grandchild]
        assert census.processes == 1 and census.fds >= 3 and census.threads >= 1 and census.rss_bytes > 0
        assert census.own_fds > 0 and census.own_threads >= 1
        assert take_census("someone-else").processes == 0  # nobody else's processes are counted
        os.kill(grandchild, 9)
        deadline = time.monotonic() + 10
        while marked_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert take_census(marker).processes == 0
    finally:
        os.environ.pop(MARKER_ENV, None)
