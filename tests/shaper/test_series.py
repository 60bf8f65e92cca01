"""Link series: cutting one message's transfer out of a link's byte series; sampling and tailing the file."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from fedbw.shaper.ledger import ClientStats
from fedbw.timewarp import Dilation
from fedbw.shaper.series import LinkSeries, Sample, SeriesReader, SeriesSampler


def _sampler(samples: list[tuple[float, int, int]], rate_bps: float | None = None) -> LinkSeries:
    """A series whose 'up' direction of client "0" is given as (t_s, bytes_in, bytes_out)."""
    s = LinkSeries(["0"], interval_s=0.005, t0_s=0.0)
    for t, b_in, b_out in samples:
        s.add("0", "up", Sample(t, b_in, b_out, t - 0.001, t - 0.001))
    return s


def _steady(t0: float, t1: float, start_bytes: int, n_bytes: int, step_s: float = 0.005) -> list[tuple[float, int, int]]:
    out, k = [], int(round((t1 - t0) / step_s))
    for i in range(1, k + 1):
        b = start_bytes + n_bytes * i // k
        out.append((t0 + i * step_s, b, b))
    return out


def test_window_bytes_and_span() -> None:
    # a 300 B poll at t=1, then a 1 MB message from t=5 to t=6, then a poll at t=9
    samples = [(1.0, 300, 300)] + _steady(5.0, 6.0, 300, 1_000_000) + [(9.0, 1_000_600, 1_000_600)]
    s = _sampler(samples)
    tr = s.transfer("0", "up", 4.9, 6.1)
    assert tr.bytes == 1_000_000
    assert tr.first_in_s == pytest.approx(5.004)
    assert tr.last_out_s == pytest.approx(5.999)
    assert tr.duration_s == pytest.approx(0.995)
    assert s.totals("0", "up") == 1_000_600


def test_extend_back_takes_the_header_but_not_the_previous_poll() -> None:
    # header (2 kB) 0.2 s before the window opens, continuous with the payload; a poll 3 s earlier
    samples = [(1.0, 300, 300), (4.8, 2300, 2300)] + _steady(5.0, 5.5, 2300, 500_000)
    s = _sampler(samples)
    plain = s.transfer("0", "up", 4.95, 5.6)
    extended = s.transfer("0", "up", 4.95, 5.6, extend_back_gap_s=1.0)
    assert plain.bytes == 500_000
    assert extended.bytes == 502_000
    assert extended.first_in_s == pytest.approx(4.799)


def test_bulk_excludes_leading_control_and_trailing_request() -> None:
    # 3 kB of control requests over 0.1 s, payload 1 s, then a 600 B trailing request 50 ms later
    samples = [(10.0, 1500, 1500), (10.1, 3000, 3000)]
    samples += _steady(10.1, 11.1, 3000, 2_000_000)
    samples += [(11.15, 2_003_600, 2_003_600)]
    s = _sampler(samples)
    tr = s.transfer("0", "up", 9.9, 11.2)
    assert tr.bytes == 2_003_600
    assert tr.duration_s == pytest.approx(11.149 - 9.999)
    assert tr.bulk_duration_s == pytest.approx(1.0, abs=0.01)
    assert tr.bulk_bytes == pytest.approx(2_000_000, rel=0.01)
    assert tr.sender_idle_s == 0.0


def test_sender_idle_time_is_reported() -> None:
    # payload that stalls for 0.3 s with nothing queued in the proxy (the sender stopped writing)
    samples = _steady(20.0, 20.5, 0, 500_000) + _steady(20.8, 21.3, 500_000, 500_000)
    s = _sampler(samples)
    tr = s.transfer("0", "up", 19.9, 21.4)
    assert tr.sender_idle_s == pytest.approx(0.305, abs=0.01)
    assert tr.request_flight_s == 0.0  # nothing crossed the other way


def test_idle_time_while_the_next_request_crosses_the_other_way_is_the_links_own() -> None:
    # the same stall, while the receiver's 200-byte request spends 0.1 s (the one-way delay) in the "down"
    # direction's proxy (in at 20.6, out at 20.7), then the sender takes 0.1 s more to answer
    samples = _steady(20.0, 20.5, 0, 500_000) + _steady(20.8, 21.3, 500_000, 500_000)
    s = _sampler(samples)
    for t, b_in, b_out in ((20.6, 200, 0), (20.7, 200, 200)):
        s.add("0", "down", Sample(t, b_in, b_out, t, t))
    tr = s.transfer("0", "up", 19.9, 21.4)
    assert tr.sender_idle_s == pytest.approx(0.305, abs=0.01)
    assert tr.request_flight_s == pytest.approx(0.1)


def test_sampler_on_the_loop_writes_what_the_reader_tails(tmp_path) -> None:
    stats = ClientStats("0")
    ledger = SimpleNamespace(clients={"0": stats})
    path = tmp_path / "series.jsonl"

    async def run() -> float:
        sampler = SeriesSampler(ledger, path, interval_s=0.002).start()
        t0 = time.perf_counter()
        stats.up.add_in(1000, t0)
        stats.up.add_out(1000, t0 + 0.001)
        await asyncio.sleep(0.03)
        reader = SeriesReader(path)
        assert reader.read().totals("0", "up") == 1000  # tailed while the sampler still runs
        stats.down.add_in(50, t0 + 0.02)
        stats.down.add_out(50, t0 + 0.021)
        await sampler.stop()  # the last change is sampled at stop
        return t0

    t0 = asyncio.run(run())
    series = SeriesReader(path).read()
    assert series.totals("0", "up") == 1000 and series.totals("0", "down") == 50
    tr = series.transfer("0", "up", t0 - 0.01, time.perf_counter())
    assert tr.bytes == 1000 and tr.first_in_s == t0
    # on another clock (emulated time under dilation 4): stamps map, the interval shrinks alike
    slow = SeriesReader(path, Dilation(4.0, t0)).read()
    assert slow.interval_s == pytest.approx(0.0005)
    assert slow.transfer("0", "up", t0 - 0.01, time.perf_counter()).last_out_s == pytest.approx(t0 + 0.00025)


def test_reader_rejects_other_files_and_waits_for_partial_lines(tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema": "other"}\n')
    with pytest.raises(ValueError, match="not a fedbw link series"):
        SeriesReader(bad).read()
    with pytest.raises(ValueError, match="no series file"):
        SeriesReader(tmp_path / "missing.jsonl").read()
    ok = tmp_path / "ok.jsonl"
    series = LinkSeries(["7"], t0_s=1.0)
    series.add("7", "up", Sample(2.0, 10, 10, 2.0, 2.0))
    series.dump(ok)
    text = ok.read_text()
    ok.write_text(text[:-5])  # the last line is still being written
    reader = SeriesReader(ok)
    assert reader.read().totals("7", "up") == 0
    ok.write_text(text)
    assert reader.read().totals("7", "up") == 10
