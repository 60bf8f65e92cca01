"""Running a :class:`Shaper` from code that is not async: a daemon-thread host and a blocking runner.

Why a thread: the emulate engine supervises Flower subprocesses with blocking calls, yet the shaper
needs an event loop that never blocks. :class:`ShaperThread` gives it one of its own; every call into
it goes through ``run_coroutine_threadsafe`` so the ledger is read on the loop's thread.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any

from fedbw.shaper.errors import ShaperError
from fedbw.shaper.link import ClientRoute
from fedbw.shaper.proxy import Shaper


def new_event_loop(use_uvloop: bool | None = None) -> asyncio.AbstractEventLoop:
    """A fresh event loop: uvloop when installed (≈ 25 % less proxy CPU) unless ``use_uvloop=False``.

    ``use_uvloop=True`` insists on it and raises ShaperError if it is missing.
    """
    if use_uvloop is not False:
        try:
            import uvloop
        except ImportError:
            if use_uvloop:
                raise ShaperError("uvloop is not installed; pip install uvloop or drop the uvloop option") from None
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


class ShaperThread:
    """A :class:`Shaper` on its own event loop in a daemon thread.

    ``start()`` returns once every port is bound (``ports`` is then filled) or raises the
    ShaperError that binding raised. ``stop()`` shuts the shaper down cleanly and joins the thread.
    Keyword arguments are passed to :class:`Shaper`.
    """

    def __init__(self, routes: Sequence[ClientRoute], *, use_uvloop: bool | None = None, **shaper_kwargs: Any) -> None:
        self._routes = list(routes)
        self._kwargs = shaper_kwargs
        self._use_uvloop = use_uvloop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.shaper: Shaper | None = None

    def start(self, timeout_s: float = 30.0) -> ShaperThread:
        if self._thread is not None:
            raise ShaperError("this ShaperThread was already started; create a new one")
        shaper = Shaper(self._routes, **self._kwargs)  # validates in the caller's thread
        loop = new_event_loop(self._use_uvloop)
        self._loop = loop
        self._thread = threading.Thread(target=self._run_loop, name="fedbw-shaper", daemon=True)
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(shaper.start(), loop)
        try:
            future.result(timeout_s)
        except BaseException:
            self._shutdown_loop()
            raise
        self.shaper = shaper
        return self

    @property
    def ports(self) -> dict[str, int]:
        return dict(self.shaper.ports) if self.shaper is not None else {}

    @property
    def running(self) -> bool:
        return self.shaper is not None and self._thread is not None and self._thread.is_alive()

    def snapshot(self, timeout_s: float = 10.0) -> dict[str, Any]:
        """A consistent ledger snapshot taken on the shaper's loop."""
        if self.shaper is None or self._loop is None:
            raise ShaperError("the shaper thread is not running; call start() first")
        return self._call(self.shaper.snapshot, timeout_s)

    def stop(self, timeout_s: float = 10.0) -> dict[str, Any] | None:
        """Stop the shaper and the thread; returns the final snapshot (None if never started)."""
        if self._loop is None:
            return None
        snap = None
        if self.shaper is not None and self._thread is not None and self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.shaper.stop(), self._loop).result(timeout_s)
            snap = self.shaper.snapshot()
        self._shutdown_loop()
        return snap

    def __enter__(self) -> ShaperThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, fn: Callable[[], Any], timeout_s: float) -> Any:
        async def call() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(timeout_s)  # type: ignore[arg-type]

    def _run_loop(self) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        loop.run_forever()

    def _shutdown_loop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        if thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10.0)
        if not loop.is_closed():
            loop.close()
        self._loop = None


def run_shaper_blocking(
    routes: Sequence[ClientRoute],
    ledger_path: str | os.PathLike[str] | None = None,
    allow_non_loopback: bool = False,
    on_ready: Callable[[Shaper], None] | None = None,
    *,
    check_upstream: bool = True,
    use_uvloop: bool | None = None,
    stop_event: threading.Event | None = None,
    **shaper_kwargs: Any,
) -> dict[str, Any]:
    """Run the shaper in the foreground until SIGINT/SIGTERM, then stop cleanly.

    ``on_ready(shaper)`` runs once every port is bound (print the ports there). Returns the final
    ledger snapshot. Signal handlers are installed only in the main thread; elsewhere, or in
    addition, set ``stop_event`` to stop.
    """
    shaper = Shaper(routes, ledger_path=ledger_path, allow_non_loopback=allow_non_loopback,
                    check_upstream=check_upstream, **shaper_kwargs)
    loop = new_event_loop(use_uvloop)

    async def main() -> dict[str, Any]:
        stop = asyncio.Event()
        installed: list[int] = []
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
                installed.append(sig)
        watcher: asyncio.Task[None] | None = None
        if stop_event is not None:
            async def watch() -> None:
                while not stop_event.is_set():
                    await asyncio.sleep(0.05)
                stop.set()
            watcher = loop.create_task(watch())
        try:
            async with shaper:
                if on_ready is not None:
                    on_ready(shaper)
                await stop.wait()
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            if watcher is not None:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
        return shaper.snapshot()

    try:
        return loop.run_until_complete(main())
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
