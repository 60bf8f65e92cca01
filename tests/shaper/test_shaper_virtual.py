"""What a link does to bytes in time, on a virtual clock: rate, latency, jitter, round robin, traces.

These are the timing behaviours the loopback tests used to measure with wall-clock tolerances (which a
busy 2-core host broke). Here the link is the proxy's own (stages, bucket, scheduler, timer, pipes)
with a fake sender and receiver on :class:`~tests.shaper.virtual.VirtualLoop`, so the times are exact
up to the scheduler's own timer grid (``EARLY_S``), whatever the host is doing. The accuracy on real
sockets is the benchmark's (benchmarks/shaper.py: goodput, 0.5 s windows, added latency).
"""

from __future__ import annotations

import statistics
import struct

import pytest

from fedbw.shaper import LinkSpec
from fedbw.shaper.link import mbps_to_bytes_per_s
from tests.shaper.virtual import EARLY_S, Conn, VirtualLoop, late_timers, make_link, ping_pong, quantum_bytes

MB = 1_000_000
ON_TIME = 0.0
LATE_S = 0.003  # a busy host: every timer and every socket wake-up up to 3 ms late


def _loop(max_late_s: float) -> VirtualLoop:
    return VirtualLoop(late_timers(max_late_s, seed=7) if max_late_s else None)


@pytest.mark.parametrize("max_late_s", [ON_TIME, LATE_S], ids=["on-time", "late-timers"])
@pytest.mark.parametrize("direction", ["up", "down"])
def test_a_transfer_is_paced_at_its_directions_rate(direction: str, max_late_s: float) -> None:
    """1 MB at 8 Mbps of payload takes 1 s, in either direction, and late wake-ups are caught up: at
    every delivery the bytes through are the link's rate × the time, never ahead, never behind."""
    loop = _loop(max_late_s)
    spec = LinkSpec(8, 100) if direction == "up" else LinkSpec(100, 8)
    conn = Conn(loop, make_link(loop, spec))
    sender, receiver = (conn.client, conn.at_server) if direction == "up" else (conn.server, conn.at_client)
    payload = bytes(range(256)) * (MB // 256) + b"x" * (MB % 256)
    sender.send(payload)
    loop.run()
    assert receiver.data == payload and receiver.eof_s is not None and receiver.eof_s >= receiver.t_last_s
    rate = mbps_to_bytes_per_s(8)
    # late wake-ups delay the sender's first write and each delivery by up to max_late_s each
    slack_s = EARLY_S + 2 * max_late_s
    assert receiver.t_last_s == pytest.approx(1.0, abs=slack_s)
    through = 0
    for t, n in receiver.writes:
        through += n
        assert through / rate <= t + EARLY_S  # never ahead of the link
        assert through / rate >= t - slack_s  # never behind it: timer lateness is not lost


def test_each_direction_has_its_own_rate() -> None:
    """A download on a 100/8 link runs at 8 Mbps while an upload runs at 100 at the same time."""
    loop = VirtualLoop()
    conn = Conn(loop, make_link(loop, LinkSpec(100, 8)))
    conn.client.send(b"u" * MB)
    conn.server.send(b"d" * (MB // 2))
    loop.run()
    assert conn.at_server.t_last_s == pytest.approx(0.08, abs=EARLY_S)  # 1 MB at 100 Mbps
    assert conn.at_client.t_last_s == pytest.approx(0.5, abs=EARLY_S)  # 0.5 MB at 8 Mbps


@pytest.mark.parametrize("max_late_s", [ON_TIME, LATE_S], ids=["on-time", "late-timers"])
def test_added_latency_each_way_and_round_trip(max_late_s: float) -> None:
    """50 ms up and 20 ms down: a ping-pong's round trip adds 70 ms (plus 64 B of serialization each
    way), and each one-way delay is its own direction's."""
    spec = LinkSpec(30, 100, latency_up_ms=50, latency_down_ms=20)
    serialization_s = 64 / mbps_to_bytes_per_s(30) + 64 / mbps_to_bytes_per_s(100)
    loop = _loop(max_late_s)
    rtts = ping_pong(loop, Conn(loop, make_link(loop, spec)), 12)
    late = 2 * 2 * max_late_s  # two one-way trips, each a timer and a socket wake-up
    assert min(rtts) >= 0.070 + serialization_s - 2 * EARLY_S
    assert max(rtts) <= 0.070 + serialization_s + late + 1e-9
    if not max_late_s:
        assert statistics.median(rtts) == pytest.approx(0.070 + serialization_s, abs=0.001)

    loop = VirtualLoop()
    conn = Conn(loop, make_link(loop, spec))
    conn.client.send(b"p" * 64, eof=False)
    conn.server.send(b"q" * 64, eof=False)
    loop.run()
    assert conn.at_server.writes[0][0] == pytest.approx(0.050, abs=EARLY_S)
    assert conn.at_client.writes[0][0] == pytest.approx(0.020, abs=EARLY_S)


def test_jitter_stays_in_bounds_and_keeps_byte_order() -> None:
    """20 ± 10 ms up: every round trip within [10, 30] ms, really spread, reproducible from the seed; a
    bulk upload whose every chunk is jittered arrives whole and in order."""
    spec = LinkSpec(100, 100, latency_up_ms=20, jitter_up_ms=10, latency_down_ms=0, seed=3)

    def rtts_of(link_spec: LinkSpec) -> list[float]:
        loop = VirtualLoop()
        return ping_pong(loop, Conn(loop, make_link(loop, link_spec, "p")), 50)

    rtts = rtts_of(spec)
    assert min(rtts) >= 0.010 - EARLY_S
    assert max(rtts) <= 0.030 + 0.0001  # + 64 B each way at 100 Mbps
    assert statistics.pstdev(rtts) > 0.004 and max(rtts) - min(rtts) > 0.010  # the jitter is really there
    assert rtts_of(spec) == rtts  # the seed makes it reproducible
    assert rtts_of(LinkSpec(100, 100, latency_up_ms=20, jitter_up_ms=10, seed=4)) != rtts

    loop = VirtualLoop()  # 8 Mbps: grants of 5 kB, 5 ms apart, each jittered by up to ±10 ms
    conn = Conn(loop, make_link(loop, LinkSpec(8, 100, latency_up_ms=20, jitter_up_ms=10, seed=3), "bulk"))
    payload = b"".join(struct.pack("!I", i) for i in range(60_000))  # 240 kB
    conn.client.send(payload)
    loop.run()
    assert len(conn.at_server.writes) > 30  # many chunks, each with its own draw
    assert conn.at_server.data == payload
    times = [t for t, _ in conn.at_server.writes]
    assert times == sorted(times)


def test_connections_of_one_client_share_its_link_round_robin() -> None:
    """Two uploads of 0.5 MB on one 8 Mbps link: the aggregate is the link rate (1 MB in 1 s) and both
    progress together, finishing within two grants of each other (the first had one grant before the
    second joined; first come, first served would finish it at 0.5 s)."""
    loop = VirtualLoop()
    link = make_link(loop, LinkSpec(8, 100))
    conns = [Conn(loop, link) for _ in range(2)]
    for conn in conns:
        conn.client.send(b"s" * (MB // 2))
    loop.run()
    ends = sorted(c.at_server.t_last_s for c in conns)
    assert all(c.at_server.n_bytes == MB // 2 for c in conns)
    assert ends[1] == pytest.approx(1.0, abs=EARLY_S)
    assert ends[0] >= 1.0 - 2 * quantum_bytes(8) / mbps_to_bytes_per_s(8) - EARLY_S
    # and all along: after 0.5 s each has had half of what went through, to a grant
    halves = [c.at_server.bytes_between(0.0, 0.5) for c in conns]
    assert abs(halves[0] - halves[1]) <= quantum_bytes(8) + 1


def test_clients_have_independent_links() -> None:
    """Two clients' 0.5 MB uploads at 8 Mbps each take 0.5 s side by side: no shared bucket."""
    loop = VirtualLoop()
    conns = [Conn(loop, make_link(loop, LinkSpec(8, 100), cid)) for cid in ("a", "b")]
    for conn in conns:
        conn.client.send(b"i" * (MB // 2))
    loop.run()
    for conn in conns:
        assert conn.at_server.n_bytes == MB // 2
        assert conn.at_server.t_last_s == pytest.approx(0.5, abs=EARLY_S)


def test_a_connection_that_vanishes_leaves_its_share_to_the_others() -> None:
    """Two uploads share a link; one is killed at 0.2 s (its socket reset). Nothing more of it is
    delivered, and the other gets the whole link from then: 0.1 MB by 0.2 s, the last 0.4 MB by 0.6 s."""
    loop = VirtualLoop()
    link = make_link(loop, LinkSpec(8, 100))
    gone, ok = Conn(loop, link), Conn(loop, link)
    gone.client.send(b"g" * MB)
    ok.client.send(b"o" * (MB // 2))
    killed = {}
    loop.call_at(0.2, lambda: killed.setdefault("dropped", gone.up.kill()))
    loop.run()
    assert killed["dropped"] > 0 and gone.up.dead
    assert gone.at_server.t_last_s <= 0.2
    assert ok.at_server.n_bytes == MB // 2 and ok.finished >= 1
    assert ok.at_server.t_last_s == pytest.approx(0.6, abs=EARLY_S + quantum_bytes(8) / mbps_to_bytes_per_s(8))


def test_rate_trace_steps_and_link_down() -> None:
    """16 Mbps, down from 0.3 s to 0.6 s, 16 Mbps again: the bytes each period carries and none while down."""
    loop = VirtualLoop()
    conn = Conn(loop, make_link(loop, LinkSpec(16, 100, up_trace=((0.3, 0), (0.6, 16)))))
    conn.client.send(b"t" * (10 * MB))
    loop.run(until=0.95)
    rate = mbps_to_bytes_per_s(16)
    slack = quantum_bytes(16) + rate * EARLY_S  # a grant that straddles a step, and the timer grid
    delivered = conn.at_server.bytes_between
    assert delivered(0.3 + EARLY_S, 0.6 - EARLY_S) == 0  # link down
    assert delivered(0.0, 0.3 + EARLY_S) == pytest.approx(0.3 * rate, abs=slack)
    assert delivered(0.6 - EARLY_S, 0.95) == pytest.approx(0.35 * rate, abs=slack)
    assert conn.at_server.n_bytes < 10 * MB  # still going: the trace, not the payload, ended the periods
