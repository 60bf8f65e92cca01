"""benchmarks/push_session.py's bookkeeping: the upload read from the link series, the table, bad input."""

from __future__ import annotations

import json

import pytest

from fedbw.report.push_session_table import push_session_markdown
from fedbw.shaper.series import Sample
from tests.benchmark_module import load_benchmark

bench = load_benchmark("push_session")


def _s(t: float, out: int) -> Sample:
    return Sample(t, out, out, t, t)


def test_the_largest_burst_is_the_longest_run_of_bytes_without_a_pause():
    samples = [_s(0.0, 0), _s(0.1, 100), _s(5.0, 100), _s(5.1, 1_100), _s(6.0, 5_100), _s(9.0, 5_100),
               _s(9.5, 5_200)]
    assert bench.largest_burst(samples) == (5_000, pytest.approx(1.0))  # 5.0 → 6.0: 5,000 bytes
    assert bench.largest_burst([_s(0.0, 0)]) == (0, 0.0)


def test_the_table_says_how_many_replies_were_lost_and_how_long_their_upload_ran():
    data = {"session_ttl_s": 180.0, "flwr": "1.42.0", "model": "resnet18", "clients": 3, "dilation": 1,
            "made_utc": "2026-12-06T22:36:35Z", "machine": "x86_64, 2 cores",
            "cases": [{"share": 0.8, "up_mbps": 5.2, "uploads": [
                          {"client": c, "bytes_up": 93.5e6, "t_up_s": 151.0, "lost": False, "error": None}
                          for c in range(3)]},
                      {"share": 1.2, "up_mbps": 3.46, "uploads": [
                          {"client": c, "bytes_up": 81.5e6, "t_up_s": 198.0, "lost": True, "error": "3: expired"}
                          for c in range(3)]},
                      {"share": 1.5, "up_mbps": 2.0, "error": "boom", "uploads": []}]}
    text = push_session_markdown(data)
    assert "| 0.80 | 5.20 Mbps | 93,500.0 kB | 151.0 s (0.84×) | 0 of 3 |" in text
    assert "| 1.20 | 3.46 Mbps | 81,500.0 kB | 198.0 s (1.10×) | 3 of 3: 3: expired |" in text
    assert "no measured upload (boom)" in text


def test_reread_without_a_result_ends_in_a_sentence(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "OUT", tmp_path / "push-session.json")
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    with pytest.raises(SystemExit, match="run without it first"):
        bench.main(["--reread"])
    with pytest.raises(SystemExit, match="numbers separated by commas"):
        bench.main(["--shares", "a,b"])


def test_the_committed_result_lost_every_reply_past_the_session_and_none_before_it():
    from pathlib import Path

    data = json.loads((Path(bench.ROOT) / "benchmarks" / "results" / "push-session.json").read_text())
    for case in data["cases"]:
        ups = case["uploads"]
        assert ups, case
        if case["share"] < 1:
            assert not any(u["lost"] for u in ups)
        else:
            assert all(u["lost"] for u in ups)
