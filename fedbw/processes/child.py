"""One child process in a session of its own, with its output in a log file, each line stamped.

Why stamped logs: Flower's log lines carry no timestamps, yet they mark when a SuperNode received a
message, started its ClientApp process and sent its reply. A reader thread stamps every line with
``time.perf_counter()`` (CLOCK_MONOTONIC: the clock of every fedbw process on the machine) as it
arrives, so framework time can be measured.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from fedbw.errors import RunError
from fedbw.processes.groups import group_alive, signal_group, wait_groups_gone, wait_groups_reaped

#: Lines of a child's log quoted in an error.
TAIL_LINES = 25
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


@dataclass(frozen=True)
class LogLine:
    t_s: float  #: perf_counter when the line was read
    text: str


class Child:
    """One supervised process (and its process group), its log file and recent lines.

    ``stop_signal`` is what :meth:`stop` sends first — to the whole group, or with ``stop_leader_only`` to
    the child alone (SIGINT lets a Python child shut Ray down in order) — then ``stop_grace_s`` passes
    before SIGKILL to the group. ``stamp=False`` writes lines as they are (no time prefix).
    """

    def __init__(self, name: str, argv: Sequence[str], env: Mapping[str, str], log_path: Path,
                 cwd: Path | None = None, on_line: Callable[[Child, LogLine], None] | None = None,
                 nice: int = 0, stop_signal: int = signal.SIGTERM, stop_grace_s: float = 5.0,
                 stop_leader_only: bool = False, stamp: bool = True, keep_lines: bool = True,
                 label: str | None = None) -> None:
        self.name = name
        #: how messages name it to a user ("SuperNode client-0"); ``name`` also names its log file
        self.label = label or name
        self.argv = list(argv)
        if nice and (nice_bin := shutil.which("nice")):
            # nice(1) execs the program: same pid, and every process it starts inherits the priority.
            self.argv = [nice_bin, "-n", str(nice), *self.argv]
        self.log_path = log_path
        self.stop_signal, self.stop_grace_s, self.stop_leader_only = stop_signal, stop_grace_s, stop_leader_only
        self.lines: list[LogLine] = []
        self._keep_lines, self._stamp = keep_lines, stamp
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._on_line = on_line
        self._lock = threading.Lock()
        self.expected_exit = False  #: set before we stop it on purpose (drop faults, teardown)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[str] = log_path.open("a", encoding="utf-8")
        try:
            self.proc = subprocess.Popen(
                self.argv, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True, text=True, errors="replace", bufsize=1)
        except OSError as exc:
            self._log.close()
            raise RunError(f"could not start {name} ({self.argv[0]}): {exc}; is it installed in this "
                           f"environment ({sys.executable})?") from None
        self.pid = self.proc.pid  #: also the id of its process group (it leads its own session)
        self._reader = threading.Thread(target=self._read, name=f"log-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = LogLine(time.perf_counter(), strip_ansi(raw.rstrip("\n")))
            with self._lock:
                if self._keep_lines:
                    self.lines.append(line)
                self._tail.append(line.text)
            self._log.write(f"{line.t_s:.6f} {line.text}\n" if self._stamp else f"{line.text}\n")
            self._log.flush()
            if self._on_line is not None:
                try:
                    self._on_line(self, line)
                except Exception:  # noqa: BLE001 - a hook must never kill the log reader
                    pass
        self._log.close()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def tail(self, n: int = TAIL_LINES) -> list[str]:
        with self._lock:
            return list(self._tail)[-n:]

    def snapshot_lines(self) -> list[LogLine]:
        with self._lock:
            return list(self.lines)

    def wait_for_line(self, needle: str, timeout_s: float) -> LogLine:
        """Block until a log line contains ``needle``; RunError if the child dies or time runs out."""
        deadline = time.monotonic() + timeout_s
        seen = 0
        while True:
            lines = self.snapshot_lines()
            for line in lines[seen:]:
                if needle in line.text:
                    return line
            seen = len(lines)
            if not self.alive:
                self._reader.join(1.0)
                if any(needle in ln.text for ln in self.snapshot_lines()[seen:]):
                    continue
                raise RunError(self.describe_failure(f"exited with code {self.returncode} while starting"))
            if time.monotonic() > deadline:
                raise RunError(self.describe_failure(f"did not report {needle!r} within {timeout_s:.0f} s"))
            time.sleep(0.05)

    def wait(self, timeout_s: float) -> int:
        """Wait for the child to exit and its output to be read to the end; its exit code.

        RunError if it is still running after ``timeout_s``."""
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise RunError(self.describe_failure(f"did not finish within {timeout_s:.0f} s")) from None
        self._reader.join(5.0)
        return code

    def describe_failure(self, what: str) -> str:
        tail = "\n".join(f"    {t}" for t in self.tail()) or "    (no output)"
        return f"{self.label} (pid {self.pid}) {what}. Last log lines ({self.log_path}):\n{tail}"

    def signal_group(self, sig: int) -> None:
        signal_group(self.pid, sig)

    def request_stop(self) -> None:
        """Send the stop signal (to the group, or to the leader alone with ``stop_leader_only``)."""
        if self.stop_leader_only:
            if self.alive:
                self.proc.send_signal(self.stop_signal)
        else:
            self.signal_group(self.stop_signal)

    def group_alive(self) -> bool:
        """Whether any process of this child's group still exists (our own zombie is reaped first)."""
        self.proc.poll()
        return group_alive(self.pid)

    def wait_signalled(self, timeout_s: float) -> bool:
        """After :meth:`request_stop`: wait until whoever got the signal has left (the leader alone with
        ``stop_leader_only``, else the whole group); True if it did within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if (not self.alive) if self.stop_leader_only else (not self.group_alive()):
                return True
            time.sleep(0.05)
        return False

    def stop(self, grace_s: float | None = None) -> None:
        """``stop_signal``, up to ``grace_s`` (default ``stop_grace_s``) to leave, then SIGKILL to the group."""
        self.expected_exit = True
        if self.group_alive():
            self.request_stop()
            self.wait_signalled(self.stop_grace_s if grace_s is None else grace_s)
            if self.group_alive():
                self.signal_group(signal.SIGKILL)
                wait_groups_gone({self.pid}, 5.0)
        try:
            self.proc.wait(1.0)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL'd above
            pass
        wait_groups_reaped({self.pid}, 2.0)
        self._reader.join(2.0)

    def kill(self) -> None:
        """Abrupt death (a client dropping out): SIGKILL the whole group at once."""
        self.expected_exit = True
        self.signal_group(signal.SIGKILL)
        try:
            self.proc.wait(5.0)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
