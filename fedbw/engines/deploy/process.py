"""Child processes the emulate engine starts, each in its own process group, with a stamped log.

Why process groups: a Flower SuperLink or SuperNode starts a SuperExec, which starts one
``flwr-serverapp``/``flwr-clientapp`` process per run or message. Signalling only the PID we started
would orphan those; signalling the group reaches all of them (SuperExec only notices its parent's
death ~10 s later).

Why stamped logs: Flower's log lines carry no timestamps, yet they mark when a SuperNode received a
message, started its ClientApp process and sent its reply. A reader thread stamps every line with
``time.perf_counter()`` (the shaper's clock) as it arrives, so framework time can be measured.
"""

from __future__ import annotations

import os
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

#: Lines of a child's log quoted in an error.
TAIL_LINES = 25


@dataclass(frozen=True)
class LogLine:
    t_s: float  #: perf_counter when the line was read
    text: str


class Child:
    """One supervised process (and its process group), its stamped log file and recent lines."""

    def __init__(self, name: str, argv: Sequence[str], env: Mapping[str, str], log_path: Path,
                 cwd: Path | None = None, on_line: Callable[[Child, LogLine], None] | None = None,
                 nice: int = 0) -> None:
        self.name = name
        self.argv = list(argv)
        if nice and (nice_bin := shutil.which("nice")):
            # nice(1) execs the program: same pid, and every process it starts inherits the priority.
            self.argv = [nice_bin, "-n", str(nice), *self.argv]
        self.log_path = log_path
        self.lines: list[LogLine] = []
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._on_line = on_line
        self._lock = threading.Lock()
        self.expected_exit = False  #: set before we stop it on purpose (drop faults, teardown)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[str] = log_path.open("w", encoding="utf-8")
        try:
            self.proc = subprocess.Popen(
                self.argv, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True, text=True, errors="replace", bufsize=1)
        except OSError as exc:
            self._log.close()
            raise RunError(f"could not start {name} ({self.argv[0]}): {exc}; is Flower installed in this "
                           f"environment ({sys.executable})?") from None
        self.pid = self.proc.pid
        self._reader = threading.Thread(target=self._read, name=f"log-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = LogLine(time.perf_counter(), strip_ansi(raw.rstrip("\n")))
            with self._lock:
                self.lines.append(line)
                self._tail.append(line.text)
            self._log.write(f"{line.t_s:.6f} {line.text}\n")
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

    def describe_failure(self, what: str) -> str:
        tail = "\n".join(f"    {t}" for t in self.tail()) or "    (no output)"
        return f"{self.name} (pid {self.pid}) {what}. Last log lines ({self.log_path}):\n{tail}"

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def group_alive(self) -> bool:
        """Whether any process of this child's group still exists (zombies of ours are reaped first)."""
        self.proc.poll()
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return _group_has_live_members(self.pid)

    def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM the group, wait ``grace_s``, then SIGKILL whatever is left of it."""
        self.expected_exit = True
        if self.group_alive():
            self.signal_group(signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and self.group_alive():
                time.sleep(0.05)
            if self.group_alive():
                self.signal_group(signal.SIGKILL)
                deadline = time.monotonic() + 5.0
                while time.monotonic() < deadline and self.group_alive():
                    time.sleep(0.05)
        try:
            self.proc.wait(1.0)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL'd above
            pass
        self._reader.join(2.0)

    def kill(self) -> None:
        """Abrupt death (a client dropping out): SIGKILL the whole group at once."""
        self.expected_exit = True
        self.signal_group(signal.SIGKILL)
        try:
            self.proc.wait(5.0)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass


def _proc_table() -> dict[int, tuple[int, int, str]]:
    """pid → (ppid, pgrp, state) of every process (Linux /proc)."""
    table: dict[int, tuple[int, int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        rest = stat[stat.rfind(")") + 2:].split()
        if len(rest) >= 3:
            table[int(entry.name)] = (int(rest[1]), int(rest[2]), rest[0])
    return table


def descendant_groups(roots: Sequence[int]) -> set[int]:
    """Process groups of every live descendant of ``roots`` — including those that started their own
    session (Flower's SuperLink detaches its SuperExec, whose ServerApp then lives in that session)."""
    if not Path("/proc").exists():  # pragma: no cover - non-Linux
        return set()
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    groups: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        for kid in children.get(pid, []):
            ppid, pgrp, state = table[kid]
            if state != "Z":
                groups.add(pgrp)
            todo.append(kid)
    groups.discard(os.getpgrp())
    return groups


def _group_runs_flower(pgid: int) -> bool:
    for pid, (_, pgrp, state) in _proc_table().items():
        if pgrp == pgid and state != "Z":
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"flwr" in cmd or b"flower" in cmd:
                return True
    return False


def _group_has_live_members(pgid: int) -> bool:
    """True if a non-zombie process with this process group id exists (Linux /proc scan)."""
    if not Path("/proc").exists():  # pragma: no cover - non-Linux: trust killpg
        return True
    return any(pgrp == pgid and state != "Z" for _, pgrp, state in _proc_table().values())


_ANSI = None


def strip_ansi(text: str) -> str:
    global _ANSI
    if _ANSI is None:
        import re

        _ANSI = re.compile(r"\x1b\[[0-9;]*m")
    return _ANSI.sub("", text)


class Supervisor:
    """Starts children, notices one dying, and stops them all — on success, error, and signals.

    Use as a context manager. Inside it, SIGTERM and SIGHUP raise KeyboardInterrupt in the main
    thread (Ctrl-C already does), so the ``with`` exit tears everything down.
    """

    def __init__(self) -> None:
        self.children: list[Child] = []
        self._old_handlers: dict[int, object] = {}
        self.known_groups: set[int] = set()  #: process groups seen below our children
        self._next_scan = 0.0

    def track(self, every_s: float = 1.0) -> None:
        """Remember the process groups of every descendant (throttled): processes that detach into a
        session of their own are re-parented to init when their parent dies, and would be lost."""
        now = time.monotonic()
        if now >= self._next_scan:
            self._next_scan = now + every_s
            self.known_groups |= descendant_groups([c.pid for c in self.children if c.alive])

    def start(self, name: str, argv: Sequence[str], env: Mapping[str, str], log_path: Path,
              **kwargs: object) -> Child:
        child = Child(name, argv, env, log_path, **kwargs)  # type: ignore[arg-type]
        self.children.append(child)
        return child

    def check(self) -> None:
        """RunError naming the first child that died without being asked to, with its last lines."""
        self.track()
        for child in self.children:
            if not child.expected_exit and not child.alive:
                raise RunError(child.describe_failure(f"exited unexpectedly with code {child.returncode}"))

    def stop_all(self, grace_s: float = 5.0) -> None:
        """Stop every child: those started last (clients) together first, then the first (the server),
        so clients do not spend their last seconds retrying a server that is already gone."""
        for child in self.children:
            child.expected_exit = True
        self.track(every_s=0.0)
        for wave in (self.children[1:], self.children[:1]):
            for child in wave:
                if child.group_alive():
                    child.signal_group(signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and any(c.group_alive() for c in wave):
                time.sleep(0.05)
        for child in self.children:
            child.stop(grace_s=0.5)
        self._stop_groups(self.known_groups - {c.pid for c in self.children}, grace_s)

    @staticmethod
    def _stop_groups(groups: set[int], grace_s: float) -> None:
        """SIGTERM, then SIGKILL, the detached groups (SuperExec and the apps it started)."""
        # Only groups that still run Flower: a remembered group id could in principle be reused.
        live = {g for g in groups if _group_runs_flower(g)}
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            for g in live:
                try:
                    os.killpg(g, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            deadline = time.monotonic() + wait_s
            while live and time.monotonic() < deadline:
                live = {g for g in live if _group_has_live_members(g)}
                if live:
                    time.sleep(0.05)
            if not live:
                return

    def __enter__(self) -> Supervisor:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, _raise_interrupt)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop_all()
        finally:
            for sig, handler in self._old_handlers.items():
                signal.signal(sig, handler)  # type: ignore[arg-type]
            self._old_handlers.clear()


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
