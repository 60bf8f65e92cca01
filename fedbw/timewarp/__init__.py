"""Time dilation: every emulated second lasts ``factor`` real seconds (DieCast, NSDI 2008).

Why: on a host with fewer cores than emulated devices, the CPU work of Flower and of the apps (process
start, serialisation, training) competes for the host, and the emulator measures that contention
instead of the links. Dilated by K, the links run K times slower, every interval and timeout of
Flower lasts K times longer, and all stamps are read back on the emulated clock
``t0 + (t − t0) / K``: a CPU second then costs 1/K of an emulated second. With each emulated device's
processes capped to 1/K of a core (:mod:`fedbw.processes.cpu_cap`) it costs exactly what it would on
a device of its own.

:class:`Dilation` is the one object every part of a dilated emulation reads: the shaper (its links'
rates ÷ K, latencies × K, its grant quantum × K), the timewarp hook (Flower's clocks and waits), the CPU
caps (a device's cores ÷ K) and host attribution (real CPU seconds and intervals back to emulated ones).

This module is stdlib only: it is imported by the launcher (:mod:`fedbw.timewarp.hook`) before
Flower starts, in every Flower process of a dilated emulation.
"""

from __future__ import annotations

import math
import os
import time as _time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

ENV_FACTOR = "FEDBW_DILATION"
ENV_T0 = "FEDBW_DILATION_T0"  #: the emulated clock's origin on CLOCK_MONOTONIC (perf_counter)
ENV_T0_WALL = "FEDBW_DILATION_T0_WALL"  #: ... and on the wall clock (time.time)


@dataclass(frozen=True)
class Dilation:
    """A dilation factor and the origin its emulated clock shares with every process of a run."""

    factor: float = 1.0
    t0_s: float = 0.0
    t0_wall_s: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.factor, bool) or not isinstance(self.factor, (int, float)) or not (
                1.0 <= float(self.factor) < math.inf):
            raise ValueError(f"a dilation factor must be a finite number >= 1, got {self.factor!r}")

    @classmethod
    def starting_now(cls, factor: float) -> Dilation:
        return cls(float(factor), _time.perf_counter(), _time.time())

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Dilation | None:
        """The dilation a launcher passed down, or None when the process runs undilated."""
        env = os.environ if env is None else env
        raw = env.get(ENV_FACTOR)
        if not raw:
            return None
        try:
            return cls(float(raw), float(env[ENV_T0]), float(env[ENV_T0_WALL]))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"bad time dilation environment ({ENV_FACTOR}={raw!r}): {exc}") from None

    @property
    def active(self) -> bool:
        return self.factor != 1.0

    def env(self) -> dict[str, str]:
        return {ENV_FACTOR: repr(self.factor), ENV_T0: repr(self.t0_s), ENV_T0_WALL: repr(self.t0_wall_s)}

    def emulated(self, t_s: float) -> float:
        """A perf_counter/monotonic stamp on the emulated clock."""
        return self.t0_s + (t_s - self.t0_s) / self.factor

    def emulated_wall(self, t_s: float) -> float:
        return self.t0_wall_s + (t_s - self.t0_wall_s) / self.factor

    def real_s(self, emulated_s: float) -> float:
        """How long an emulated duration lasts in real time."""
        return emulated_s * self.factor

    def emulated_s(self, real_s: float) -> float:
        """A duration measured in real seconds, undilated: what it reports as (÷ K)."""
        return real_s / self.factor

    def slower(self, per_s: float) -> float:
        """A rate as it runs dilated: ÷ K (a link's Mbps; an infinite rate stays infinite)."""
        return per_s / self.factor

    def cpu_cores(self, cores: float) -> float:
        """The CPU cap, in cores of this host, of a machine of ``cores`` when it runs dilated: ÷ K (a core
        second of the emulated machine lasts K real seconds)."""
        return cores / self.factor

    @property
    def time_scale(self) -> float:
        """Real intervals → emulated ones (1/K): a sampling interval as the emulated clock counts it."""
        return 1.0 / self.factor

    def clock(self) -> Callable[[float], float] | None:
        """perf_counter stamps → the emulated clock (None undilated: stamps stay as they are)."""
        return self.emulated if self.active else None


#: An undilated run: every method is the identity.
NO_DILATION = Dilation()


class DilatedTime:
    """Stands in for the ``time`` module inside a module whose waits and stamps must be emulated:
    ``sleep`` lasts K times longer, ``time``/``monotonic``/``perf_counter`` (and their ``_ns``) read the
    emulated clock; everything else is the real module's."""

    def __init__(self, dilation: Dilation) -> None:
        self._d = dilation

    def sleep(self, seconds: float) -> None:
        _time.sleep(max(0.0, seconds) * self._d.factor)

    def perf_counter(self) -> float:
        return self._d.emulated(_time.perf_counter())

    def monotonic(self) -> float:
        return self._d.emulated(_time.monotonic())

    def time(self) -> float:
        return self._d.emulated_wall(_time.time())

    def perf_counter_ns(self) -> int:
        return int(self.perf_counter() * 1e9)

    def monotonic_ns(self) -> int:
        return int(self.monotonic() * 1e9)

    def time_ns(self) -> int:
        return int(self.time() * 1e9)

    def __getattr__(self, name: str) -> Any:
        return getattr(_time, name)


def dilated_sleep(dilation: Dilation) -> Any:
    """``time.sleep`` for modules that imported it by name (``from time import sleep``)."""
    def sleep(seconds: float) -> None:
        _time.sleep(max(0.0, seconds) * dilation.factor)
    return sleep
