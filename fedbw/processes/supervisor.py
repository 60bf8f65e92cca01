"""One supervisor for every child process fedbw starts: engines, the shaper, benchmarks.

It starts children (each in its own session), notices one dying unexpectedly, and stops them all — on
success, on error, on Ctrl-C and on SIGTERM/SIGHUP — including the processes they started, also those
that detached into sessions of their own.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fedbw.errors import RunError
from fedbw.processes.child import Child
from fedbw.processes.groups import descendant_groups, groups_rss_bytes, groups_run, stop_groups

#: Detached groups are stopped only if they still run one of these (a group id could be reused).
DETACHED_NEEDLES = (b"flwr", b"flower", b"ray", b"fedbw")

#: Signals that stop a run; held back while a child is being started and registered.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Supervisor:
    """Starts children, notices one dying, and stops them all.

    Use as a context manager. Inside it, SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread
    (Ctrl-C already does), so the ``with`` exit tears everything down. Children stop in waves, highest
    ``wave`` first (``start(..., wave=0)`` for a server whose clients should go before it), each wave
    together: its members get their stop signal at once and up to their grace to leave.
    """

    def __init__(self) -> None:
        self.children: list[Child] = []
        self._waves: dict[int, int] = {}  #: child pid → wave
        self._old_handlers: dict[int, Any] = {}
        self.known_groups: set[int] = set()  #: process groups seen below our children
        self._next_scan = 0.0
        #: held while a child is registered and while stop_all begins: a child started from another thread
        #: (emulate restarts a returning client's SuperNode from a log reader) is either stopped or refused
        self._registry = threading.Lock()
        self._stopping = False

    def start(self, name: str, argv: Sequence[str], env: Mapping[str, str], log_path: Path, *, wave: int = 1,
              **kwargs: Any) -> Child:
        with _stop_signals_held(), self._registry:
            if self._stopping:
                raise RunError(f"not starting {name}: the run is stopping")
            child = Child(name, argv, env, log_path, **kwargs)
            self.children.append(child)
            self._waves[child.pid] = wave
        return child

    def track(self, every_s: float = 1.0) -> None:
        """Remember the process groups of every descendant (throttled): processes that detach into a
        session of their own are re-parented to init when their parent dies, and would be lost."""
        now = time.monotonic()
        if now >= self._next_scan:
            self._next_scan = now + every_s
            self.known_groups |= descendant_groups([c.pid for c in self.children if c.alive])

    def check(self) -> None:
        """RunError naming the first child that died without being asked to, with its last lines."""
        self.track()
        for child in self.children:
            if not child.expected_exit and not child.alive:
                raise RunError(child.describe_failure(f"exited unexpectedly with code {child.returncode}"))

    def rss_bytes(self) -> int:
        """Resident memory of every process of every child's group and of the groups below them."""
        self.track()
        return groups_rss_bytes({c.pid for c in self.children} | self.known_groups)

    def stop_all(self) -> None:
        """Stop every child, wave by wave, then whatever their descendants left in detached groups."""
        with self._registry:
            self._stopping = True
        for child in self.children:
            child.expected_exit = True
        self.track(every_s=0.0)
        for wave in sorted(set(self._waves.values()), reverse=True):
            members = [c for c in self.children if self._waves[c.pid] == wave and c.group_alive()]
            for child in members:
                child.request_stop()
            deadline = time.monotonic() + max((c.stop_grace_s for c in members), default=0.0)
            for child in members:
                child.wait_signalled(max(0.0, deadline - time.monotonic()))
        for child in self.children:
            child.stop(grace_s=0.5)
        detached = self.known_groups - {c.pid for c in self.children}
        stop_groups(groups_run(detached, DETACHED_NEEDLES), grace_s=5.0)

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
                signal.signal(sig, handler)
            self._old_handlers.clear()


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def _stop_signals_held() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP until the block ends, then act on the first one that came.

    Why: a KeyboardInterrupt raised between the fork inside ``subprocess.Popen`` and the child's
    registration leaves a process nobody knows to stop (seen in CI: a SuperNode and its SuperExec left
    after Ctrl-C during start-up). Python runs signal handlers only in the main thread, so elsewhere
    nothing can interrupt the block and it is left as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    # A handler installed outside Python reads as None and could not be put back: left alone.
    held = [sig for sig in STOP_SIGNALS if signal.getsignal(sig) is not None]
    old = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum)) for sig in held}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if caught:
        _deliver(caught[0], old[caught[0]])


def _deliver(signum: int, handler: object) -> None:
    """Act on a held signal as its own handler would have."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        os.kill(os.getpid(), signum)
