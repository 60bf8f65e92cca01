"""A given Flower app's ClientApp load time, from the calibrated one of fedbw's own apps.

What a deployment pays per message to start a ``flwr-clientapp`` process is mostly imports: Flower's
(before the process logs its start: ``clientapp_start_s``) and then the app's, when Flower loads it
(inside ``clientapp_other_s``). ``fedbw calibrate`` measured both for fedbw's apps; for another app this
module times, in fresh Python processes, importing Flower's ClientApp entry and loading each app, and
shifts the calibrated ``clientapp_other_s`` by the difference (an app that imports torch loads seconds
later than one that imports NumPy; fedbw's own apps import pydantic and more).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fedbw.errors import RunError

FEDBW_CLIENTAPP = "fedbw.fl.client_app:app"
_TIMER = """
import sys, time
t0 = time.perf_counter()
import flwr.supernode.cli.flwr_clientapp
from flwr.supercore.object_ref import load_app
load_app(sys.argv[1], RuntimeError, sys.argv[2] or None)
print(time.perf_counter() - t0)
"""
#: Even an app that imports nothing is unpacked, installed and loaded per message (Flower 1.42).
MIN_OTHER_S = 0.1


def load_time_s(ref: str, app_dir: Path | None, repeats: int = 2) -> float:
    """Best-of wall time for a fresh process to import Flower's ClientApp entry and load ``ref``."""
    best = float("inf")
    for _ in range(repeats):
        proc = subprocess.run([sys.executable, "-c", _TIMER, ref, str(app_dir or "")], capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise RunError(f"loading the ClientApp {ref!r} failed in a fresh process: {tail}")
        best = min(best, float(proc.stdout.strip().splitlines()[-1]))
    return best


def host_reference_s(repeats: int = 3, quiet_below: float = 0.1, wait_s: float = 60.0) -> float:
    """How fast this host starts a ClientApp now: the best-of-``repeats`` wall time for a fresh process to
    import Flower's ClientApp entry and load fedbw's ClientApp (Python start, imports: what dominates
    Flower's per-message CPU), timed once the host's CPUs are below ``quiet_below`` busy over a second (at
    most ``wait_s`` of waiting): the processes of a run that just ended (Ray's workers, a SuperExec that
    exits seconds after its SuperNode) would otherwise slow it. ``fedbw calibrate`` records it beside its
    constants; a comparison made at another moment on a shared VM, whose speed drifts within minutes,
    times it again to say how fast the host was then (and can rescale the constants by it:
    :func:`fedbw.calibration.file.at_host_speed`)."""
    import time

    import psutil

    deadline = time.monotonic() + wait_s
    while psutil.cpu_percent(interval=1.0) / 100 > quiet_below and time.monotonic() < deadline:
        pass
    return load_time_s(FEDBW_CLIENTAPP, None, repeats)


def app_clientapp_other_s(calibrated_other_s: float, client_ref: str, app_dir: Path) -> float:
    """The app's ClientApp work before its code runs: fedbw's calibrated one, shifted by the difference
    in load time between the app and fedbw's ClientApp."""
    delta = load_time_s(client_ref, app_dir) - load_time_s(FEDBW_CLIENTAPP, None)
    return max(MIN_OTHER_S, calibrated_other_s + delta)
