"""Availability traces: the intervals' queries, the CSV reader's errors, and the generators' statistics."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedbw.errors import ConfigError
from fedbw.traces.availability import Availability, diurnal, read_availability, two_state, write_availability

TRACE = Availability({0: ((0.0, 10.0), (20.0, 30.0)), 1: ((5.0, 40.0),)}, 40.0, "test")


def test_queries_answer_who_is_on_line_and_until_when() -> None:
    assert TRACE.is_online(0, 0.0) and not TRACE.is_online(0, 10.0) and TRACE.is_online(0, 25.0)
    assert TRACE.online_until(0, 3.0) == 10.0 and TRACE.online_until(0, 15.0) is None
    assert TRACE.next_online(0, 12.0) == 20.0 and TRACE.next_online(0, 31.0) is None
    assert TRACE.online_clients(7.0) == [0, 1] and TRACE.online_share(15.0) == 0.5
    assert TRACE.fraction(0) == 0.5 and TRACE.fraction(1) == pytest.approx(35 / 40)
    s = TRACE.stats()
    assert s.mean_session_s == pytest.approx(55 / 3) and s.mean_gap_s == 10.0 and s.clients == 2


def test_a_csv_round_trips_and_every_bad_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    write_availability(path, TRACE)
    back = read_availability(path)
    assert back.intervals == TRACE.intervals and back.horizon_s == 40.0
    for body, expected in [("client,start_s,end_s\n0,5,3\n", "b.csv:2: end_s (3) must be after start_s (5)"),
                           ("0,0,10\n0,5,12\n", "b.csv:2: client 0: 5–12 s overlaps 0–10 s"),
                           ("x,0,10\n", "b.csv:1: client 'x' is not a whole number"),
                           ("0,0\n", "b.csv:1: expected client,start_s,end_s; got 2 field(s)"),
                           ("0,0,inf\n", "b.csv:1: end_s must be a finite number ≥ 0"),
                           ("client,start_s,end_s\n", "no interval lines")]:
        (tmp_path / "b.csv").write_text(body)
        with pytest.raises(ConfigError) as exc:
            read_availability(tmp_path / "b.csv")
        assert expected in str(exc.value)


def test_two_state_matches_its_means_and_stationary_share() -> None:
    a = two_state(200, mean_on_s=600.0, mean_off_s=1800.0, horizon_s=86_400.0, seed=1)
    s = a.stats()
    assert s.mean_fraction == pytest.approx(0.25, abs=0.02)  # on / (on + off)
    assert s.mean_session_s == pytest.approx(600.0, rel=0.1) and s.mean_gap_s == pytest.approx(1800.0, rel=0.1)
    assert a.intervals == two_state(200, 600.0, 1800.0, 86_400.0, seed=1).intervals  # seeded
    assert a.intervals != two_state(200, 600.0, 1800.0, 86_400.0, seed=2).intervals


def test_diurnal_puts_most_clients_on_line_at_the_peak_and_fewest_half_a_day_later() -> None:
    a = diurnal(300, mean_on_s=1800.0, mean_off_s=3600.0, horizon_s=2 * 86_400.0, amplitude=0.8, peak_hour=2.0,
                seed=0)
    peak = sum(a.online_share(t) for t in (86_400 + 2 * 3600 + k * 600 for k in range(-3, 4))) / 7
    trough = sum(a.online_share(t) for t in (86_400 + 14 * 3600 + k * 600 for k in range(-3, 4))) / 7
    assert peak > 1.5 * trough


@pytest.mark.parametrize("kwargs, message", [({"mean_on_s": 0.0}, "mean_on_s must be a number > 0"),
                                             ({"clients": -1}, "clients must be a number > 0"),
                                             ({"amplitude": 1.0}, "amplitude must lie in [0, 1)")])
def test_bad_generator_arguments_name_the_argument(kwargs: dict, message: str) -> None:
    args = {"clients": 3, "mean_on_s": 10.0, "mean_off_s": 10.0, "horizon_s": 100.0, **kwargs}
    with pytest.raises(ConfigError) as exc:
        diurnal(**args)
    assert message in str(exc.value)
