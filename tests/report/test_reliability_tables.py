"""docs/reliability.md's soak table says how many rounds ran, and that a soak was interrupted."""

from __future__ import annotations

from fedbw.report.reliability_tables import soak_markdown


def _census(round_index: int | None = None) -> dict:
    row = {"processes": 20, "fds": 120, "threads": 60, "rss_bytes": 1478 * 2**20, "rss_long_lived_bytes": 900 * 2**20,
           "own_fds": 26, "own_threads": 6}
    return row if round_index is None else {"round": round_index, "t_s": 60.0 * round_index, **row}


def _soak(rounds_run: int, status: str, stopped: str | None = None) -> dict:
    return {"clients": 16, "rounds": 20, "dilation": 1.0, "wall_s": 600.0, "status": status, "stopped": stopped,
            "per_round": [_census(r) for r in range(1, rounds_run + 1)], "before": _census(), "after": _census(),
            "verdicts": {"ok": True, "rss_growth_round2_to_last": 0.01, "rss_growth_bound": 0.25},
            "started": "2026-12-02T02:30:00+00:00", "machine": {"cores": 2, "loadavg_start": [0.5]}}


def test_a_finished_soak_shows_its_rounds() -> None:
    text = soak_markdown(_soak(20, "complete"))
    assert "16 clients × 20 rounds" in text and "interrupted" not in text and "no leak" in text


def test_an_interrupted_soak_says_how_far_it_got() -> None:
    text = soak_markdown(_soak(7, "interrupted", "signal 15 after 7 of 20 rounds"))
    assert "16 clients × 7 of 20 rounds" in text and "Stopped early (interrupted): signal 15 after 7" in text
    assert text.count("\n| 7 |") == 1 and "| 8 |" not in text


def test_a_soak_killed_mid_run_says_so() -> None:
    """A SIGKILL leaves the file of the last finished round (status "running"): it is not a whole soak."""
    text = soak_markdown(_soak(3, "running"))
    assert "16 clients × 3 of 20 rounds" in text and "Stopped early (running): killed mid-run" in text
