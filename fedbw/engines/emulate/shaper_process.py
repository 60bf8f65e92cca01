"""The emulation's shaper, run as a process of its own (:mod:`fedbw.shaper.service`) under the supervisor.

It is started before the SuperNodes and stopped after everything else (wave -1), so no SuperNode ever
talks to a route that is gone. What it measures comes back through its link-series file, read here
on the emulation's clock (emulated time under dilation).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedbw.errors import RunError
from fedbw.processes import Supervisor
from fedbw.shaper.series import DEFAULT_INTERVAL_S, LinkSeries, SeriesReader
from fedbw.shaper.service import READY, parse_ready, write_spec
from fedbw.shaper.stages import dilated_quantum_s
from fedbw.timewarp import NO_DILATION, Dilation

STARTUP_TIMEOUT_S = 30.0
#: The shaper stops after every other process, so nothing is cut off mid-byte.
SHAPER_WAVE = -1


class ShaperProcess:
    """``python -m fedbw.shaper.service`` for ``routes``; its ports and its link series. With
    ``cpu_group`` the shaper runs in that cgroup (devices are capped there; the shaper is not, but shares
    their high weight, so other work on the host does not delay its bytes). ``routes`` are already dilated
    (rates ÷ K); ``dilation`` stretches the grant quantum to match (:func:`dilated_quantum_s`) and reads
    the series back on the emulated clock."""

    def __init__(self, sup: Supervisor, workdir: Path, routes: Sequence[Any], *, shared_link: Any = None,
                 env: dict[str, str], interval_s: float = DEFAULT_INTERVAL_S, cpu_group: Any = None,
                 dilation: Dilation = NO_DILATION) -> None:
        logs = workdir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.series_path = logs / "link-series.jsonl"
        spec = write_spec(workdir / "shaper-spec.json", routes, shared_link=shared_link,
                          ledger=logs / "ledger.jsonl", series=self.series_path, interval_s=interval_s,
                          quantum_s=dilated_quantum_s(len(routes), dilation))
        self.interval_s = interval_s
        self.child = sup.start("shaper", [sys.executable, "-m", "fedbw.shaper.service", str(spec)], env,
                               logs / "shaper.log", wave=SHAPER_WAVE)
        if cpu_group is not None:  # uncapped, but weighted above the host's other work (processes/cpu_cap.py)
            cpu_group.add(self.child.pid)
        try:
            line = self.child.wait_for_line(READY, STARTUP_TIMEOUT_S)
        except RunError as exc:
            raise RunError(f"the link shaper did not start: {exc}") from None
        self.ports = parse_ready(line.text)
        self.pids = [self.child.pid]  #: to signal (fedbw.shaper.anchor)
        self._reader = SeriesReader(self.series_path, dilation)

    def series(self) -> LinkSeries:
        """Everything the shaper has sampled so far."""
        try:
            return self._reader.read()
        except ValueError as exc:
            raise RunError(f"the link shaper's series is unreadable: {exc}") from None

    def final_series(self) -> LinkSeries:
        """The series once the last bytes have been sampled (the sampler writes every interval)."""
        time.sleep(3 * self.interval_s)
        return self.series()
