"""Rate and delay stages on a fake clock: round robin, idle vs. continuous demand, jitter order."""

from __future__ import annotations

import random

import pytest

from fedbw.shaper.bucket import TokenBucket
from fedbw.shaper.stages import DelayStage, RateStage, SharedLink


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class FakeFlow:
    def __init__(self, name: str, pending: int = 0) -> None:
        self.name = name
        self.in_ring = False
        self.pending = pending
        self.paused = False

    @property
    def sendable(self) -> bool:
        return self.pending > 0 and not self.paused

    @property
    def pending_bytes(self) -> int:
        return self.pending


def make(rate_bytes_per_s: float = 1e6, quantum_s: float = 0.005):
    clock = FakeClock()
    stage = RateStage(TokenBucket(rate_bytes_per_s, clock=clock, start_s=0.0), quantum_s=quantum_s)
    return clock, stage


def grant(stage: RateStage, clock: FakeClock):
    g = stage.next_grant(clock.t)
    if g is None:
        return None
    flow, n, t_ready = g
    flow.pending -= n
    stage.requeue(flow)
    return flow.name, n, t_ready


def test_round_robin_quanta_and_aggregate_rate():
    clock, stage = make()  # 1 MB/s, quantum 5 ms = 5000 B
    a, b = FakeFlow("a", 20_000), FakeFlow("b", 20_000)
    stage.add(a, 0.0)
    stage.add(b, 0.0)
    seen = []
    while (g := grant(stage, clock)) is not None or stage.waiting:
        if g is None:
            clock.t = stage.t_free  # a perfect timer
            continue
        seen.append(g)
    assert [name for name, _, _ in seen] == ["a", "b"] * 4
    assert all(n == 5000 for _, n, _ in seen)
    assert seen[-1][2] == pytest.approx(0.040)  # 40 kB at 1 MB/s, shared


def test_one_grant_ahead_only():
    clock, stage = make()
    a = FakeFlow("a", 100_000)
    stage.add(a, 0.0)
    assert grant(stage, clock) == ("a", 5000, pytest.approx(0.005))
    assert grant(stage, clock) is None  # the bucket is busy until 5 ms


def test_idle_link_charges_serialization_again():
    """Bytes that arrive after an idle spell pay their serialization time: no hidden credit."""
    clock, stage = make()
    a = FakeFlow("a", 1000)
    stage.add(a, 0.0)
    assert grant(stage, clock)[2] == pytest.approx(0.001)
    clock.t = 1.0
    a.pending = 1000
    stage.add(a, clock.t)
    assert grant(stage, clock)[2] == pytest.approx(1.001)


def test_continuous_demand_catches_up_late_wakeups():
    clock, stage = make()
    a = FakeFlow("a", 1_000_000)
    stage.add(a, 0.0)
    t_ready = 0.0
    for _ in range(100):
        t_ready = grant(stage, clock)[2]
        clock.t = t_ready + 0.0007  # every wake-up 0.7 ms late
    assert t_ready == pytest.approx(0.5)  # 100 × 5000 B at 1 MB/s, lateness not lost


def test_parked_flow_does_not_bank_credit():
    clock, stage = make()
    a, b = FakeFlow("a", 5000), FakeFlow("b", 5000)
    b.paused = True  # its receiver is full: it waits in the ring without being ready
    stage.add(a, 0.0)
    stage.add(b, 0.0)
    assert grant(stage, clock)[0] == "a"
    clock.t = 2.0
    b.paused = False
    assert stage.add(b, clock.t) is False  # still in the ring, but ready only from now
    assert grant(stage, clock) == ("b", 5000, pytest.approx(2.005))


def test_delay_stage_jitter_bounds_and_order():
    stage = DelayStage(0.020, 0.010, random.Random(1))
    prev = float("-inf")
    dues = []
    for i in range(1000):
        t_ready = i * 0.001
        due = stage.due(t_ready, prev)
        assert due >= prev and due >= t_ready + 0.010
        if due > prev:
            assert due <= t_ready + 0.030
        prev = due
        dues.append(due - t_ready)
    assert max(dues) > 0.028 and min(dues) < 0.015
    again = DelayStage(0.020, 0.010, random.Random(1))
    assert again.due(0.0, float("-inf")) == DelayStage(0.020, 0.010, random.Random(1)).due(0.0, float("-inf"))


def test_a_shared_server_bucket_is_shared_max_min_fairly():
    """Three clients capped at 8, 8 and 2 MB/s behind a 10 MB/s server link get 4, 4 and 2 MB/s."""
    clock = FakeClock()
    shared = SharedLink(TokenBucket(10e6, clock=clock, start_s=0.0))
    caps = (8e6, 8e6, 2e6)
    stages = [RateStage(TokenBucket(c, clock=clock, start_s=0.0), quantum_s=0.005, shared=shared) for c in caps]
    flows = [FakeFlow(f"c{i}", pending=10**12) for i in range(3)]
    sent = [0, 0, 0]
    for stage, flow in zip(stages, flows):
        stage.add(flow, 0.0)
    while clock.t < 10.0:  # every client books its next quantum once its last is through, as the scheduler does
        for i, (stage, flow) in enumerate(zip(stages, flows)):
            grant = stage.next_grant(clock.t)
            if grant is not None:
                _, n, _ = grant
                sent[i] += n
                stage.requeue(flow)
        clock.t += 0.0005
    rates = [s / 10.0 for s in sent]
    assert rates[2] == pytest.approx(2e6, rel=0.02)  # capped by its own link
    assert rates[0] == pytest.approx(4e6, rel=0.05) and rates[1] == pytest.approx(4e6, rel=0.05)
    assert sum(rates) == pytest.approx(10e6, rel=0.02)  # the server link is full


def test_quantum_by_federation_size() -> None:
    """5 ms up to MANY_LINKS routes, 10 ms beyond; a quantum given outright wins."""
    from fedbw.shaper import LinkSpec, Shaper
    from fedbw.shaper.stages import DEFAULT_QUANTUM_S, MANY_LINKS, MANY_LINKS_QUANTUM_S, quantum_for
    from tests.shaper.helpers import route

    assert quantum_for(1) == quantum_for(MANY_LINKS) == DEFAULT_QUANTUM_S
    assert quantum_for(MANY_LINKS + 1) == MANY_LINKS_QUANTUM_S > DEFAULT_QUANTUM_S
    routes = [route(f"c{i}", 9, LinkSpec(30, 30)) for i in range(MANY_LINKS + 1)]
    assert Shaper(routes).quantum_s == MANY_LINKS_QUANTUM_S
    assert Shaper(routes[:MANY_LINKS]).quantum_s == DEFAULT_QUANTUM_S
    assert Shaper(routes, quantum_s=0.002).quantum_s == 0.002


def test_receive_buffer_is_larger_than_the_send_buffer() -> None:
    """The queue after the link (send) stays capped; the one before it (receive) holds RECV_BUF_FACTOR ×."""
    import socket

    from fedbw.shaper.sockets import RECV_BUF_FACTOR, cap_buffers

    with socket.socket() as sock:
        cap_buffers(sock, 64 * 1024)
        snd = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        rcv = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    # Linux doubles a request for its bookkeeping, after capping it at net.core.{w,r}mem_max
    def kernel(request: int, limit: str) -> int:
        with open(f"/proc/sys/net/core/{limit}", encoding="ascii") as fh:
            return 2 * min(request, int(fh.read()))

    assert snd == kernel(64 * 1024, "wmem_max")
    assert rcv == kernel(64 * 1024 * RECV_BUF_FACTOR, "rmem_max")


@pytest.mark.parametrize("routes", [1, 16])
@pytest.mark.parametrize("factor", [1.0, 4.0, 7.0])
def test_a_dilated_grant_carries_the_bytes_of_an_undilated_one(routes: int, factor: float) -> None:
    """Under dilation by K the link's rate is ÷ K; the grant quantum (link time) is × K, so every grant,
    one write the receiver must read, carries the same bytes as without dilation (a quantum left in real
    seconds would cut grants to 1/K and make the receiver read K× as often per emulated byte)."""
    import asyncio
    import time

    from fedbw.shaper import LinkSpec
    from fedbw.shaper.link import LinkDirection
    from fedbw.shaper.stages import dilated_quantum_s, quantum_for
    from fedbw.timewarp import NO_DILATION, Dilation

    warp = Dilation(factor)
    assert dilated_quantum_s(routes, NO_DILATION) == quantum_for(routes)
    assert dilated_quantum_s(routes, warp) == pytest.approx(quantum_for(routes) * factor)
    assert dilated_quantum_s(routes, Dilation(1e6)) == 1.0  # the shaper's bound
    loop = asyncio.new_event_loop()
    try:
        def grant_bytes(spec: LinkSpec, quantum_s: float) -> int:
            d = LinkDirection("c", spec, "up", t0_s=0.0, loop=loop, quantum_s=quantum_s, burst_bytes=0.0,
                              clock=time.perf_counter)
            assert d.rate is not None
            return d.rate._quantum_at(0.0)

        spec = LinkSpec(30, 150)
        assert grant_bytes(spec.dilated(warp), dilated_quantum_s(routes, warp)) == pytest.approx(
            grant_bytes(spec, quantum_for(routes)), abs=1)
        if factor > 1:  # what the real-seconds quantum did: grants of 1/K the bytes
            assert grant_bytes(spec.dilated(warp), quantum_for(routes)) < grant_bytes(spec, quantum_for(routes)) / (
                factor - 0.5)
    finally:
        loop.close()
