"""Byte/time series of every shaped link, sampled from the shaper's ledger while the run goes.

Why sample: a SuperNode reuses keep-alive connections across polls and messages, so a connection's
first/last byte times span many messages. Sampling each client's running totals every few ms and
cutting the series at message boundaries (from the SuperNode's stamped log) gives per-message bytes
and the time from a transfer's first byte into the proxy to its last byte out to the receiver.
"""

from __future__ import annotations

import bisect
import threading
import time
from dataclasses import dataclass
from typing import Any

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
    sender_idle_s: float = 0.0  #: time inside the payload with nothing queued in the proxy (sender-limited)

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


class LedgerSampler:
    """A daemon thread that records each client's per-direction totals whenever they change.

    It reads the ledger's counters without the shaper's loop (plain ints/floats under the GIL): a
    sample may straddle one update, which moves a byte count by one read at most.
    """

    def __init__(self, ledger: Any, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self._ledger = ledger
        self.interval_s = interval_s
        self.series: dict[tuple[str, str], list[Sample]] = {
            (cid, d): [Sample(time.perf_counter(), 0, 0, None, None)] for cid in ledger.clients for d in ("up", "down")}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fedbw-ledger-sampler", daemon=True)

    def start(self) -> LedgerSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2.0)
        self._sample()

    def _sample(self) -> None:
        now = time.perf_counter()
        for cid, stats in list(self._ledger.clients.items()):
            for d in ("up", "down"):
                st = getattr(stats, d)
                series = self.series[(cid, d)]
                last = series[-1]
                if st.bytes_in != last.bytes_in or st.bytes_out != last.bytes_out:
                    series.append(Sample(now, st.bytes_in, st.bytes_out, st.last_in_s, st.last_out_s))

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def transfer(self, client_id: str, direction: str, t_from_s: float, t_to_s: float,
                 extend_back_gap_s: float = 0.0) -> Transfer:
        """Bytes delivered in (t_from_s, t_to_s] and the span of the transfer that carried them.

        With ``extend_back_gap_s`` the window also takes in activity just before ``t_from_s`` that is
        continuous with it (no pause longer than the gap): a SuperNode logs "Receiving" only after the
        message's header has arrived, so the header's bytes precede the log line.
        """
        series = self.series[(client_id, direction)]
        times = [s.t_s for s in series]
        i0 = max(0, bisect.bisect_right(times, t_from_s) - 1)
        i1 = max(0, bisect.bisect_right(times, t_to_s) - 1)
        if extend_back_gap_s > 0 and i1 > i0:
            first = i0 + 1  # first change inside the window
            while first - 1 > 0 and series[first].t_s - series[first - 1].t_s < extend_back_gap_s:
                first -= 1
            i0 = first - 1
        base, end = series[i0], series[i1]
        first_in = None
        for s in series[i0 + 1:i1 + 1]:
            if s.bytes_in > base.bytes_in:
                first_in = s.last_in_s
                break
        last_out = None
        for s in reversed(series[i0 + 1:i1 + 1]):
            if s.bytes_out > base.bytes_out:
                last_out = s.last_out_s
                break
        bulk_bytes, bulk_first, bulk_last, idle_s = 0, None, None, 0.0
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
                for s in series[k + 1:i1 + 1]:
                    if prev.bytes_in == prev.bytes_out and s.t_s - prev.t_s > 2 * self.interval_s:
                        idle_s += s.t_s - prev.t_s
                    prev = s
                    if end.bytes_out - s.bytes_out <= TAIL_BYTES:
                        bulk_last = s.last_out_s
                        bulk_bytes = s.bytes_out - start_in
                        break
        return Transfer(end.bytes_out - base.bytes_out, first_in, last_out, bulk_bytes, bulk_first, bulk_last,
                        idle_s)

    def dump(self, path: Any) -> None:
        """Write the series as JSON lines (client, direction, t_s, bytes_in, bytes_out): for debugging
        and for benchmarks that want to plot a transfer."""
        import json
        from pathlib import Path

        with Path(path).open("w", encoding="utf-8") as fh:
            for (cid, d), series in self.series.items():
                for s in series:
                    fh.write(json.dumps([cid, d, s.t_s, s.bytes_in, s.bytes_out, s.last_in_s, s.last_out_s]) + "\n")

    def totals(self, client_id: str, direction: str) -> int:
        return self.series[(client_id, direction)][-1].bytes_out
