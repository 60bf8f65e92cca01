"""Headless Chromium driven over the DevTools protocol through a pipe (``--remote-debugging-pipe``).

Why a pipe: no port is opened and no extra package is needed (no websockets, no Selenium); Chromium reads
protocol messages from fd 3 and writes them to fd 4, each a JSON object ended by a NUL byte. Host names
never resolve (``--host-resolver-rules``), so a page that needed the network would show it as a failed
request instead of reaching anything.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
         "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
         "--disable-default-apps", "--disable-extensions", "--disable-sync", "--metrics-recording-only",
         "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--password-store=basic", "--hide-scrollbars",
         "--window-size=1200,900", "--mute-audio"]


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@dataclass
class PageCheck:
    """What the browser saw: the page's images, its console, its requests, and a full-page screenshot."""

    title: str
    images: list[dict[str, Any]]
    text: str
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    screenshot_png: bytes = b""


class Chromium:
    """One headless Chromium process and its DevTools pipe (use as a context manager)."""

    def __init__(self, exe: str, profile_dir: Path, log_path: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # in the child: fds 3 and 4 are the protocol's pipe ends
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                     preexec_fn=wire, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._cond = threading.Condition()
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 65536)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cond:
                        self._replies[msg["id"]] = msg
                        self._cond.notify_all()
                else:
                    self.events.put(msg)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout_s: float = 30.0) -> dict[str, Any]:
        self._next_id += 1
        mid = self._next_id
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while mid not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no reply to {method} within {timeout_s} s (chromium exit {self.proc.poll()})")
                self._cond.wait(min(left, 0.5))
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout_s=5)
        except (TimeoutError, RuntimeError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # our own child, by its handle
            self.proc.wait(5)
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


IMAGES_JS = ("JSON.stringify(Array.from(document.images).map(i => ({alt: i.alt, scheme: i.src.split(':')[0], "
             "complete: i.complete, naturalWidth: i.naturalWidth, naturalHeight: i.naturalHeight})))")


def check_page(browser: Chromium, url: str, timeout_s: float = 60.0) -> PageCheck:
    """Open ``url`` in a new tab, wait for its load event, and collect what a test needs to judge it."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.send(f"{domain}.enable", session=session)
    browser.send("Page.navigate", {"url": url}, session=session)
    errors: list[str] = []
    requests: list[str] = []
    deadline = time.monotonic() + timeout_s
    loaded = False
    while time.monotonic() < deadline:
        try:
            ev = browser.events.get(timeout=0.5)
        except queue.Empty:
            if loaded:
                break  # half a second of quiet after the load event: late console messages are in
            continue
        if ev.get("sessionId") != session:
            continue
        method, params = ev.get("method"), ev.get("params", {})
        if method == "Page.loadEventFired":
            loaded = True
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
            errors.append(f"console.{params['type']}: " + " ".join(str(a.get("value", a.get("description")))
                                                                  for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            errors.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") in ("error", "warning"):
            e = params["entry"]
            errors.append(f"log.{e['level']}: {e.get('text')} ({e.get('url', '')})")
        elif method == "Network.requestWillBeSent":
            requests.append(params.get("request", {}).get("url", "")[:80])
        elif method == "Network.loadingFailed":
            errors.append(f"request failed: {params.get('errorText')}")
    if not loaded:
        raise TimeoutError(f"{url} did not finish loading within {timeout_s} s")

    def js(expr: str) -> Any:
        return browser.send("Runtime.evaluate", {"expression": expr, "returnByValue": True},
                            session=session)["result"].get("value")

    images = json.loads(js(IMAGES_JS))
    metrics = browser.send("Page.getLayoutMetrics", session=session)
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    shot = browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                   "clip": {"x": 0, "y": 0, "width": size["width"],
                                                            "height": size["height"], "scale": 1}},
                        session=session, timeout_s=60)
    return PageCheck(js("document.title"), images, js("document.body.innerText"), errors, requests,
                     base64.b64decode(shot["data"]))
