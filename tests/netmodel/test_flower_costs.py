"""The expressions for one message that the clock and calibration's fit share (fedbw.netmodel.flower_costs)."""

from __future__ import annotations

import pytest

from fedbw.netmodel.flower_costs import FlowerCosts, pull_stored_at

COSTS = FlowerCosts()


def test_a_message_already_stored_is_pulled_at_once() -> None:
    assert pull_stored_at(5.0, 4.0, 131, COSTS) == 5.0


def test_one_worker_gets_the_message_at_its_first_retry_after_it_is_stored_on_average() -> None:
    # tries at 0, then 1 ± 0.2, then + 2 ± 0.4: stored at 1.5, it has the message at 3 s on average
    assert pull_stored_at(0.0, 1.5, 1, COSTS) == pytest.approx(3.0)
    # no jitter: exactly Flower's grid 1, 3, 7 s
    exact = FlowerCosts(backoff_jitter=0.0)
    assert [pull_stored_at(0.0, t, 1, exact) for t in (0.5, 1.5, 3.5, 9.0)] == [1.0, 3.0, 7.0, 15.0]


def test_two_workers_wait_for_the_later_of_their_retries_whatever_the_objects() -> None:
    one, two, many = (pull_stored_at(0.0, 1.5, k, COSTS) for k in (1, 2, 131))
    assert one < two == many <= 3.0 + 0.6  # the later of two jittered retries, never past the jitter's end


def test_the_expected_pull_moves_smoothly_and_never_back_as_the_download_lengthens() -> None:
    times = [pull_stored_at(0.0, 0.5 + 0.05 * i, 2, COSTS) for i in range(200)]
    assert all(b >= a - 1e-12 for a, b in zip(times, times[1:]))
    # near a retry point the jitter spreads the step: no single 0.05 s step jumps by a whole backoff
    assert max(b - a for a, b in zip(times, times[1:])) < 1.0
