"""RateStage.grant_ready (the shaper's hot loop) makes exactly the grants next_grant + requeue make.

Why a property test: grant_ready books constant-rate grants inline for speed (issue 15's CPU target),
so it repeats TokenBucket.reserve's arithmetic; any drift between the two would shape links wrongly
only in the common case. Both paths get the same generated story — flows gaining bytes, pausing and
resuming, the clock jumping by small and large steps (late timers, stalls past max_lag) — and must
agree grant for grant.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fedbw.shaper.bucket import TokenBucket
from fedbw.shaper.stages import RateStage
from tests.shaper.test_shaper_stages import FakeClock, FakeFlow

_step = st.tuples(st.integers(0, 3), st.integers(0, 40_000), st.booleans(),
                  st.sampled_from([0.0, 0.0001, 0.002, 0.005, 0.03, 1.5]))


def _play(story: list[tuple[int, int, bool, float]], inline: bool, rate: float) -> list[tuple[str, int, float]]:
    clock = FakeClock()
    stage = RateStage(TokenBucket(rate, clock=clock, start_s=0.0), quantum_s=0.005)
    flows = [FakeFlow(f"f{i}") for i in range(4)]
    grants: list[tuple[str, int, float]] = []

    def push(flow: FakeFlow, n: int, t_ready: float) -> None:
        flow.pending -= n
        grants.append((flow.name, n, round(t_ready, 9)))

    for who, more, pause, dt in story:
        clock.t += dt
        flow = flows[who]
        flow.pending += more
        flow.paused = pause and more % 3 == 0
        if flow.sendable:
            stage.add(flow, clock.t)
        if inline:
            stage.grant_ready(clock.t, push)
        else:
            while (g := stage.next_grant(clock.t)) is not None:
                push(*g)
                stage.requeue(g[0])
    return grants


@settings(max_examples=150, deadline=None, derandomize=True)
@given(story=st.lists(_step, min_size=1, max_size=60), rate=st.sampled_from([1e5, 3.75e6, 1e7]))
def test_inline_grants_equal_the_reference_path(story, rate) -> None:
    assert _play(story, True, rate) == _play(story, False, rate)
