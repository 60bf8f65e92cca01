"""Byte/time series of every shaped link: sampled on the shaper's own loop, read by whoever measures.

Why a series: a Flower SuperNode reuses keep-alive connections across polls and messages, so a
connection's first/last byte times span many messages. Each client's running totals, sampled every
few ms and cut at message boundaries (from the SuperNode's stamped log), give per-message bytes and
the time from a transfer's first byte into the proxy to its last byte out to the receiver.

:class:`SeriesSampler` runs as a task on the shaper's event loop (so it reads the ledger on the loop
that updates it, and shares no interpreter with the measuring side) and appends every change to a
JSON-lines file; :class:`SeriesReader` tails that file from another process into a
:class:`LinkSeries`, which answers "what crossed this link between t1 and t2".
"""

from __future__ import annotations

import asyncio
import bisect
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from fedbw.files.versioned import LINK_SERIES
from fedbw.timewarp import Dilation

DEFAULT_INTERVAL_S = 0.005
#: A message's leading control exchange (push/pull requests, headers) stays under this many bytes.
CONTROL_BYTES = 16 * 1024
#: ... and its trailing requests under this many.
TAIL_BYTES = 4 * 1024


@dataclass(frozen=True)
class Sample:
    t_s: float
    bytes_in: int
    bytes_out: int
    last_in_s: float | None
    last_out_s: float | None


@dataclass(frozen=True)
class Transfer:
    """What crossed one direction of a link inside a time window."""

    bytes: int  #: delivered to the receiver (proxy "out")
    first_in_s: float | None  #: sender's first byte reached the proxy
    last_out_s: float | None  #: last byte handed to the receiver
    bulk_bytes: int = 0  #: bytes after the leading control exchange (the message's payload requests)
    bulk_first_in_s: float | None = None  #: when the payload's first byte reached the proxy
    bulk_last_out_s: float | None = None  #: when the payload's last byte left (before trailing requests)
    #: Time inside the payload with nothing queued in the proxy: the link could have carried bytes the
    #: sender had not handed over yet (its host was slower than its link).
    sender_idle_s: float = 0.0
    #: The part of ``sender_idle_s`` in which the other direction of the link had bytes in flight: the next
    #: request on its way to the sender (a message fetched or pushed object by object waits a one-way delay
    #: per request). The link's own time, which a real link of that latency spends too, not the host's.
    request_flight_s: float = 0.0

    @property
    def duration_s(self) -> float:
        """First byte in → last byte out: what the message cost on this link, round trips included."""
        if self.first_in_s is None or self.last_out_s is None:
            return 0.0
        return max(0.0, self.last_out_s - self.first_in_s)

    @property
    def bulk_duration_s(self) -> float:
        """Payload's first byte in → last byte out: what the network model's transfer time predicts."""
        if self.bulk_first_in_s is None or self.bulk_last_out_s is None:
            return 0.0
        return max(0.0, self.bulk_last_out_s - self.bulk_first_in_s)


class LinkSeries:
    """Every client's per-direction totals over time, and transfers cut out of them."""

    def __init__(self, clients: list[str], interval_s: float = DEFAULT_INTERVAL_S, t0_s: float | None = None) -> None:
        t0 = time.perf_counter() if t0_s is None else t0_s
        self.interval_s = interval_s
        self.series: dict[tuple[str, str], list[Sample]] = {
            (cid, d): [Sample(t0, 0, 0, None, None)] for cid in clients for d in ("up", "down")}
        self._times: dict[tuple[str, str], list[float]] = {k: [v[0].t_s] for k, v in self.series.items()}

    def add(self, client_id: str, direction: str, sample: Sample) -> None:
        self.series[(client_id, direction)].append(sample)
        self._times[(client_id, direction)].append(sample.t_s)

    def mapped(self, to_time: Callable[[float], float], interval_s: float) -> LinkSeries:
        """The same series on another clock (``to_time`` maps every stamp), e.g. emulated time."""
        out = LinkSeries([], interval_s)
        out.series = {key: [_mapped(s, to_time) for s in samples] for key, samples in self.series.items()}
        out._times = {key: [s.t_s for s in samples] for key, samples in out.series.items()}
        return out

    def totals(self, client_id: str, direction: str) -> int:
        return self.series[(client_id, direction)][-1].bytes_out

    def transfer(self, client_id: str, direction: str, t_from_s: float, t_to_s: float,
                 extend_back_gap_s: float = 0.0) -> Transfer:
        """Bytes delivered in (t_from_s, t_to_s] and the span of the transfer that carried them.

        With ``extend_back_gap_s`` the window also takes in activity just before ``t_from_s`` that is
        continuous with it (no pause longer than the gap): a SuperNode logs "Receiving" only after the
        message's header has arrived, so the header's bytes precede the log line.
        """
        series, times = self.series[(client_id, direction)], self._times[(client_id, direction)]
        i0 = max(0, bisect.bisect_right(times, t_from_s) - 1)
        i1 = max(0, bisect.bisect_right(times, t_to_s) - 1)
        if extend_back_gap_s > 0 and i1 > i0:
            first = i0 + 1  # first change inside the window
            while first - 1 > 0 and series[first].t_s - series[first - 1].t_s < extend_back_gap_s:
                first -= 1
            i0 = first - 1
        base, end = series[i0], series[i1]
        first_in = next((s.last_in_s for s in series[i0 + 1:i1 + 1] if s.bytes_in > base.bytes_in), None)
        last_out = next((s.last_out_s for s in reversed(series[i0 + 1:i1 + 1]) if s.bytes_out > base.bytes_out), None)
        bulk_bytes, bulk_first, bulk_last, idle_s, flight_s = 0, None, None, 0.0, 0.0
        total_in = end.bytes_in - base.bytes_in
        if total_in > 0:
            # The payload starts after the leading control requests: past the last sample still within
            # CONTROL_BYTES (or 1 %) of the window's start; the start lies between that sample and the next.
            limit = max(CONTROL_BYTES, 0.01 * total_in)
            k = i0
            while k + 1 <= i1 and series[k + 1].bytes_in - base.bytes_in <= limit:
                k += 1
            if k + 1 <= i1:
                nxt = series[k + 1]
                if k == i0:
                    bulk_first = first_in
                else:
                    hi = nxt.last_in_s if nxt.last_in_s is not None else nxt.t_s
                    bulk_first = (series[k].t_s + max(series[k].t_s, hi)) / 2.0
                start_in = series[k].bytes_in
                # ... and ends before the small trailing requests (the message's root object is pushed
                # after its children): the first sample within TAIL_BYTES of the window's total.
                bulk_last = last_out
                prev = series[k]
                other = (client_id, "up" if direction == "down" else "down")
                for s in series[k + 1:i1 + 1]:
                    if prev.bytes_in == prev.bytes_out and s.t_s - prev.t_s > 2 * self.interval_s:
                        idle_s += s.t_s - prev.t_s
                        flight_s += self._in_flight_s(other, prev.t_s, s.t_s)
                    prev = s
                    if end.bytes_out - s.bytes_out <= TAIL_BYTES:
                        bulk_last = s.last_out_s
                        bulk_bytes = s.bytes_out - start_in
                        break
        return Transfer(end.bytes_out - base.bytes_out, first_in, last_out, bulk_bytes, bulk_first, bulk_last,
                        idle_s, flight_s)

    def _in_flight_s(self, key: tuple[str, str], t_from_s: float, t_to_s: float) -> float:
        """Time within (t_from_s, t_to_s) in which direction ``key`` held bytes in (into its proxy) not yet out
        (to the receiver): a series keeps a sample per change, so each state lasts until the next sample."""
        series, times = self.series.get(key), self._times.get(key)
        if not series or not times:
            return 0.0
        i = max(0, bisect.bisect_right(times, t_from_s) - 1)
        held = 0.0
        while i < len(series) and series[i].t_s < t_to_s:
            start = max(t_from_s, series[i].t_s)
            stop = min(t_to_s, series[i + 1].t_s) if i + 1 < len(series) else t_to_s
            if series[i].bytes_in > series[i].bytes_out and stop > start:
                held += stop - start
            i += 1
        return held

    def dump(self, path: str | Path) -> None:
        """The series as a series file (what :class:`SeriesReader` reads): for benchmarks that plot a
        transfer and for a look after a run."""
        with Path(path).open("w", encoding="utf-8") as fh:
            fh.write(json.dumps(_header(sorted({c for c, _ in self.series}), self.interval_s)) + "\n")
            for (cid, d), samples in self.series.items():
                for s in samples[1:]:
                    fh.write(_line(cid, d, s))


def _mapped(s: Sample, to_time: Callable[[float], float]) -> Sample:
    return replace(s, t_s=to_time(s.t_s), last_in_s=None if s.last_in_s is None else to_time(s.last_in_s),
                   last_out_s=None if s.last_out_s is None else to_time(s.last_out_s))


def _header(clients: list[str], interval_s: float) -> dict[str, Any]:
    return {**LINK_SERIES.stamp(), "clients": clients, "interval_s": interval_s,
            "t0_s": time.perf_counter()}


def _num(t: float | None) -> str:
    return "null" if t is None else repr(t)


def _line(cid: str, direction: str, s: Sample) -> str:
    # the same line the sampler writes (formatted there from a prefix per link direction)
    return (f"[{json.dumps(cid)}, \"{direction}\", {s.t_s!r}, {s.bytes_in}, {s.bytes_out}, {_num(s.last_in_s)}, "
            f"{_num(s.last_out_s)}]\n")


class SeriesSampler:
    """Samples a ledger's per-client totals on the shaper's loop and appends every change to a file.

    It runs as a timer chain beside the shaper's links (``start()`` on the running loop; ``stop()``
    takes a last sample and closes the file), so reading the counters needs no lock and no other
    thread. Why it is written tightly: with 32 links it formats ≈ 6,600 lines a second on the loop that
    moves the bytes, so each line is one f-string from a prefix made once per link direction.
    """

    def __init__(self, ledger: Any, path: str | Path, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self._ledger = ledger
        self.interval_s = interval_s
        self.path = Path(path)
        #: per link direction: [line prefix, its DirStats, last bytes_in, last bytes_out]
        self._watch: list[list[Any]] = [
            [f"[{json.dumps(cid)}, \"{d}\", ", getattr(stats, d), 0, 0]
            for cid, stats in ledger.clients.items() for d in ("up", "down")]
        self._fh: IO[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._next_s = 0.0

    def start(self) -> SeriesSampler:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("w", encoding="utf-8")
        self._fh.write(json.dumps(_header(list(self._ledger.clients), self.interval_s)) + "\n")
        self._fh.flush()
        self._loop = asyncio.get_running_loop()
        self._next_s = self._loop.time() + self.interval_s
        self._handle = self._loop.call_at(self._next_s, self._tick)
        return self

    async def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._fh is not None:
            self.sample()
            self._fh.close()
            self._fh = None

    def sample(self) -> None:
        t = repr(time.perf_counter())
        lines = []
        for w in self._watch:
            st = w[1]
            b_in, b_out = st.bytes_in, st.bytes_out
            if b_in != w[2] or b_out != w[3]:
                w[2], w[3] = b_in, b_out
                l_in, l_out = st.last_in_s, st.last_out_s
                lines.append(f"{w[0]}{t}, {b_in}, {b_out}, {'null' if l_in is None else repr(l_in)}, "
                             f"{'null' if l_out is None else repr(l_out)}]\n")
        if lines and self._fh is not None:
            self._fh.write("".join(lines))
            self._fh.flush()

    def _tick(self) -> None:
        # Due times advance by the interval from the previous due time (no drift); after a stall the
        # chain restarts from now instead of firing a burst of catch-up samples.
        loop = self._loop
        assert loop is not None
        self.sample()
        now = loop.time()
        self._next_s += self.interval_s
        if self._next_s < now:
            self._next_s = now + self.interval_s
        self._handle = loop.call_at(self._next_s, self._tick)


class SeriesReader:
    """Tails a series file into a :class:`LinkSeries` (call :meth:`read` for what arrived since).

    ``dilation`` puts every stamp on the emulated clock as it is read and shrinks the sampling interval
    alike (× 1/K); without it, stamps stay as they are.
    """

    def __init__(self, path: str | Path, dilation: Dilation | None = None) -> None:
        self.path = Path(path)
        self._to_time = None if dilation is None else dilation.clock()
        self._time_scale = 1.0 if dilation is None else dilation.time_scale
        self._offset = 0
        self._partial = ""
        self.series: LinkSeries | None = None

    def read(self) -> LinkSeries:
        """The series so far; raises ValueError if the file is not a series file."""
        if not self.path.exists():
            raise ValueError(f"{self.path}: no series file (the shaper did not start?)")
        with self.path.open("r", encoding="utf-8") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
            self._offset = fh.tell()
        text = self._partial + chunk
        lines = text.split("\n")
        self._partial = lines.pop()  # an unfinished last line waits for the next read
        for raw in lines:
            if not raw:
                continue
            row = json.loads(raw)
            if self.series is None:
                if (why := LINK_SERIES.problem(row, self.path)) is not None:
                    raise ValueError(why)
                t0 = float(row["t0_s"])
                self.series = LinkSeries(list(row["clients"]), float(row["interval_s"]) * self._time_scale,
                                         self._to_time(t0) if self._to_time else t0)
                continue
            cid, d, t, b_in, b_out, l_in, l_out = row
            sample = Sample(t, b_in, b_out, l_in, l_out)
            self.series.add(cid, d, _mapped(sample, self._to_time) if self._to_time else sample)
        if self.series is None:
            raise ValueError(f"{self.path}: the series file has no header yet")
        return self.series
