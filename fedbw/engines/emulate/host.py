"""How much of an emulated round the host held: CPU samples during the run, and the per-round verdict.

The emulator's figures describe the links only while the host keeps up. Two views of the host are
kept: how busy its CPUs were (host-wide, and per device when devices are capped in cgroups), sampled
while the run goes; and what that cost the critical path, from the transfers (the link idle while a
message was still incomplete) and the ClientApp starts (longer than Flower's worst-case task poll
plus the fastest start that device showed in this run). :func:`host_round` turns both into a round's
:class:`~fedbw.results.host_record.HostRound`.

A link idle mid-payload is not always the host's doing. A message of many objects (Flower sends each
array as objects of its own, fetched two requests at a time) waits between objects for the next request
to cross the link the other way (a one-way delay each: the link's own, measured by the shaper as
``request_flight_s``), and keeps a one-core device's CPU busy between requests, as a real device of that
speed would (it pushes an upload's objects and asks for a download's one by one, so its CPU paces both);
the server answers every request of every client on its own cores. So a payload's idle time, less the
requests' flight, is split in proportion to the client device's CPU use over that payload as a share of its
cap (from the cgroup's own counter; :attr:`MessageHold.device_s`), what that leaves in proportion to the
server group's (:attr:`MessageHold.server_s`: emulate's server has ``SERVER_CORES``), and the rest is the
host's. Without caps or samples the whole idle time less the flight stays the host's.

Every figure here is measured: the emulator is the reference the model is checked against, so its
verdict on the host never uses the model or its calibration (tests/engines/emulate/test_independent.py).
The price: a host loaded through a whole run makes every start slow, the fastest too, and the late
starts go unnoticed; the CPU samples (``cpu_busy``) still say so.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psutil

from fedbw.flower_protocol import SUPEREXEC_TASK_POLL_S
from fedbw.results.host_record import HostRound
from fedbw.timewarp import NO_DILATION, Dilation

SAMPLE_EVERY_S = 0.5

#: The CPU group of the SuperLink side (SuperLink, its SuperExec, the ServerApp), keyed beside the devices.
SERVER = -1
#: The shaper's group: not capped (it must run in real time), weighted like the devices; never sampled.
SHAPER = -2


@dataclass(frozen=True)
class HostSample:
    t_s: float  #: on the emulation's clock
    busy_cpu_s: float  #: host-wide busy CPU seconds since boot (real)
    device_cpu_s: Mapping[int, float] = field(default_factory=dict)  #: per capped group: devices, SERVER (real CPU s)
    device_throttled_s: Mapping[int, float] = field(default_factory=dict)

    def as_row(self) -> list[Any]:
        """The sample as emulate.json keeps it: ``[t_s, busy_cpu_s, {client: cpu_s}, {client: throttled_s}]``."""
        return [self.t_s, self.busy_cpu_s, {str(k): v for k, v in self.device_cpu_s.items()},
                {str(k): v for k, v in self.device_throttled_s.items()}]


def _busy_cpu_s() -> float:
    t = psutil.cpu_times()
    return sum(getattr(t, k, 0.0) for k in ("user", "nice", "system", "irq", "softirq", "steal"))


class HostSampler:
    """Takes a :class:`HostSample` at most every :data:`SAMPLE_EVERY_S` when :meth:`maybe_sample` is called."""

    def __init__(self, groups: Mapping[int, Any], dilation: Dilation = NO_DILATION) -> None:
        #: client id (or :data:`SERVER`) → fedbw.processes.cpu_cap.CpuGroup; the shaper's is left out
        self.groups = {k: g for k, g in groups.items() if k != SHAPER}
        self.to_time = dilation.emulated
        self.dilation = dilation
        self.capped = any(k >= 0 for k in self.groups)
        self.samples: list[HostSample] = []
        self.cores = psutil.cpu_count() or 1
        self._next = 0.0

    def maybe_sample(self) -> None:
        now = time.perf_counter()
        if now < self._next:
            return
        self._next = now + SAMPLE_EVERY_S
        cpu: dict[int, float] = {}
        throttled: dict[int, float] = {}
        for cid, g in self.groups.items():
            try:
                used = g.cpu_seconds()
                throttled[cid] = g.throttled_s()
            except OSError:
                continue
            if used is not None:
                cpu[cid] = used
        self.samples.append(HostSample(self.to_time(now), _busy_cpu_s(), cpu, throttled))

    def busy_share(self, client_id: int, t_from_s: float, t_to_s: float) -> float | None:
        """The share of its cap that a capped device's processes (or the server's, ``client_id`` =
        :data:`SERVER`) used between two stamps on the emulation's clock, 0..1, from the samples inside the
        window; None when the group is not capped or fewer than two samples fall inside (a short transfer
        undilated: its idle time stays the host's)."""
        inside = self._inside(client_id, t_from_s, t_to_s)
        if inside is None:
            return None
        used = inside[-1].device_cpu_s[client_id] - inside[0].device_cpu_s[client_id]
        cap = self.groups[client_id].cores * self.dilation.real_s(inside[-1].t_s - inside[0].t_s)
        return min(1.0, max(0.0, used / cap)) if cap > 0 else None

    def throttled(self, client_id: int, t_from_s: float, t_to_s: float) -> float | None:
        """How long the group's cap held its processes back per second of the window (the cgroup's own
        throttled time, counted per run queue: up to the number of the host's cores its threads wait on);
        None as for :meth:`busy_share`. A process that cannot use its whole cap (one Python thread under a
        cap of two cores) is held by its cap only where this says so."""
        inside = self._inside(client_id, t_from_s, t_to_s)
        if inside is None or client_id not in inside[0].device_throttled_s or client_id not in inside[-1].device_throttled_s:
            return None
        held = inside[-1].device_throttled_s[client_id] - inside[0].device_throttled_s[client_id]
        real_s = self.dilation.real_s(inside[-1].t_s - inside[0].t_s)
        return max(0.0, held / real_s) if real_s > 0 else None

    def _inside(self, client_id: int, t_from_s: float, t_to_s: float) -> list[HostSample] | None:
        if client_id not in self.groups:
            return None
        inside = [s for s in self.samples if t_from_s <= s.t_s <= t_to_s and client_id in s.device_cpu_s]
        return inside if len(inside) >= 2 and inside[-1].t_s > inside[0].t_s else None


def _at(samples: Sequence[HostSample], t_s: float) -> HostSample | None:
    if not samples:
        return None
    i = bisect.bisect_right([s.t_s for s in samples], t_s)
    return samples[max(0, min(i, len(samples)) - 1)] if i else samples[0]


def host_round_for(sampler: HostSampler | None, clients: Sequence[int],
                   ) -> Callable[[MessageHold, float, float, float], HostRound]:
    """A round's host record maker over what ``sampler`` has sampled so far (no samples: lost time only)."""
    def make(held: MessageHold, round_time_s: float, t_from_s: float, t_to_s: float) -> HostRound:
        if sampler is None:
            return host_round(held, round_time_s, t_from_s, t_to_s, [], 1, clients, dilation=NO_DILATION,
                              capped=False)
        return host_round(held, round_time_s, t_from_s, t_to_s, sampler.samples, sampler.cores, clients,
                          dilation=sampler.dilation, capped=sampler.capped)
    return make


def host_round(held: MessageHold, round_time_s: float, t_from_s: float, t_to_s: float,
               samples: Sequence[HostSample], cores: int, clients: Sequence[int], *, dilation: Dilation,
               capped: bool) -> HostRound:
    """The round's host record: lost time and share (the host's part of ``held``; the devices' own part
    kept beside it), and what the CPU samples say about its window (the samples' stamps are emulated;
    host CPU seconds are real, so the window is put back in real seconds)."""
    a, b = _at(samples, t_from_s), _at(samples, t_to_s)
    busy = saturated = dev_cpu = dev_thr = None
    if a is not None and b is not None and b.t_s > a.t_s:
        real_s = dilation.real_s(b.t_s - a.t_s)
        busy = min(1.0, max(0.0, (b.busy_cpu_s - a.busy_cpu_s) / (real_s * cores)))
        saturated = _saturated_share(samples, a, b, cores, dilation)
        if capped:
            # what the devices used and waited, as emulated seconds (a capped core second = 1/K of one)
            dev_cpu = sum(b.device_cpu_s.get(c, 0.0) - a.device_cpu_s.get(c, 0.0) for c in clients)
            dev_thr = sum(b.device_throttled_s.get(c, 0.0) - a.device_throttled_s.get(c, 0.0) for c in clients)
            dev_thr = dilation.emulated_s(dev_thr)
    share = held.host_s / round_time_s if round_time_s > 0 else 0.0
    return HostRound(lost_s=held.host_s, share=share, cpu_busy=busy, dilation=dilation.factor, cpu_capped=capped,
                     device_cpu_s=dev_cpu, device_throttled_s=dev_thr,
                     device_bound_s=held.device_s if capped else None,
                     server_bound_s=held.server_s if capped else None, cpu_saturated=saturated)


#: A sampling interval in which the host's CPUs were at least this busy, all of them, had no core to spare.
SATURATED_BUSY = 0.95


def _saturated_share(samples: Sequence[HostSample], a: HostSample, b: HostSample, cores: int,
                     dilation: Dilation) -> float:
    """The share of a round's time (from sample ``a`` to ``b``) in sampling intervals where every core was
    busy (:data:`SATURATED_BUSY`). Only then can the host have kept any process from running: a runnable
    process gets an idle core while one exists. So it bounds what the host can have starved, in every part
    of the round (a ClientApp's set-up too, which the idle link cannot show)."""
    inside = [s for s in samples if a.t_s <= s.t_s <= b.t_s]
    full = 0.0
    for s0, s1 in zip(inside, inside[1:]):
        span = s1.t_s - s0.t_s
        if span > 0 and (s1.busy_cpu_s - s0.busy_cpu_s) / (dilation.real_s(span) * cores) >= SATURATED_BUSY:
            full += span
    return min(1.0, full / (b.t_s - a.t_s))


@dataclass(frozen=True)
class MessageHold:
    """Time a message's critical path spent on something other than its links and its training."""

    host_s: float = 0.0  #: the host's: the rest of the link's idle time, and late ClientApp starts
    device_s: float = 0.0  #: the device's own: link idle × the device's CPU use over that payload (share of its cap)
    server_s: float = 0.0  #: the server's own: what the device leaves × the server's CPU use over the payload

    def __add__(self, other: MessageHold) -> MessageHold:
        return MessageHold(self.host_s + other.host_s, self.device_s + other.device_s, self.server_s + other.server_s)


def message_hold(parts: Mapping[str, float], bulk: Mapping[str, Any], worst_start_s: float | None) -> MessageHold:
    """One message's hold: its link idle mid-payload less the time the next request spent crossing the other
    way (``{direction}_request_flight_s``: the link's own), split by ``{direction}_device_busy`` (the client
    device's CPU use over that payload as a share of its cap, :meth:`HostSampler.busy_share`) and what that
    leaves by ``{direction}_server_busy`` (the server's, likewise: a request waits while either side works at
    its own speed; absent: all the host's), and a ClientApp start beyond ``worst_start_s``
    (:meth:`StartReference.worst_s`; None: no reference)."""
    host = device = server = 0.0
    for direction in ("down", "up"):
        idle = max(0.0, float(bulk.get(f"{direction}_sender_idle_s") or 0.0)
                   - float(bulk.get(f"{direction}_request_flight_s") or 0.0))
        own = idle * _share(bulk.get(f"{direction}_device_busy"))
        served = (idle - own) * _share(bulk.get(f"{direction}_server_busy"))
        host += idle - own - served
        device += own
        server += served
    if worst_start_s is not None:
        host += max(0.0, float(parts.get("clientapp_start_s", 0.0)) - worst_start_s)
    return MessageHold(host, device, server)


def _share(busy: Any) -> float:
    """A group's CPU use as a share of its cap, 0..1; unknown (None) explains nothing."""
    return 0.0 if busy is None else min(1.0, max(0.0, float(busy)))


#: A ClientApp start longer than Flower's full task poll plus this × the device's fastest start is the host's.
START_MARGIN = 1.2


class StartReference:
    """Each device's fastest ClientApp start so far in this run ("all objects received" → "ClientApp
    running"): what a start costs that device when the host keeps up, measured rather than modelled, so a
    phone's slow starts are its own and not the host's. A round's starts are added before they are
    judged, so a device's first round has a reference and a start is never late against itself."""

    def __init__(self) -> None:
        self._fastest: dict[int, float] = {}

    def add(self, client_id: int, start_s: float) -> None:
        if start_s > 0:
            self._fastest[client_id] = min(start_s, self._fastest.get(client_id, start_s))

    def worst_s(self, client_id: int) -> float | None:
        """The longest start that is still the device's own: the SuperExec's full task poll (a launch may
        wait that long on any host) plus :data:`START_MARGIN` × its fastest start; None before any."""
        fastest = self._fastest.get(client_id)
        return None if fastest is None else SUPEREXEC_TASK_POLL_S + START_MARGIN * fastest


def judge_messages(times: Sequence[Any], sampler: HostSampler | None, starts: StartReference) -> None:
    """Set each of a round's messages' hold (``t_host_s``, ``t_device_s``, ``t_server_s``; each a
    :class:`~fedbw.engines.emulate.attribution.MessageTimes`): the round's ClientApp starts join ``starts``
    first, so a device's first round has a reference; each payload's device CPU use goes into its ``bulk``
    (``{down,up}_device_busy``) where ``sampler`` can say it."""
    for t in times:
        starts.add(t.client_id, float(t.parts.get("clientapp_start_s", 0.0)))
    for t in times:
        if sampler is not None:
            for d in ("down", "up"):
                first, last = t.bulk.get(f"{d}_first_s"), t.bulk.get(f"{d}_last_s")
                if first is not None and last is not None:
                    t.bulk[f"{d}_device_busy"] = sampler.busy_share(t.client_id, first, last)
                    t.bulk[f"{d}_device_throttled"] = sampler.throttled(t.client_id, first, last)
                    t.bulk[f"{d}_server_busy"] = sampler.busy_share(SERVER, first, last)
                    t.bulk[f"{d}_server_throttled"] = sampler.throttled(SERVER, first, last)
        held = message_hold(t.parts, t.bulk, starts.worst_s(t.client_id))
        t.t_host_s, t.t_device_s, t.t_server_s = held.host_s, held.device_s, held.server_s
