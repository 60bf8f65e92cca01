"""benchmarks/shaper.py's bookkeeping: quanta to compare, the proxy's kernel counts, the medians it writes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.benchmark_module import load_benchmark

bench = load_benchmark("shaper")


def test_also_quantum_ms_parses_and_rejects_with_one_line() -> None:
    assert bench._quanta("") == []
    assert bench._quanta("8, 10") == [8.0, 10.0]
    with pytest.raises(SystemExit, match="'ten' is not a number of ms"):
        bench._quanta("8,ten")
    with pytest.raises(SystemExit, match=r"must be in \(0, 1000\] ms"):
        bench._quanta("0")


class _Done:
    """A `perf stat` process that has already exited."""

    def wait(self, timeout: float | None = None) -> int:
        return 0


def test_perf_counts_are_read_per_second(tmp_path) -> None:
    csv = tmp_path / "perf.csv"
    csv.write_text("# started on Tue Dec  1\n\n"
                   "900,,context-switches,8000000,100.00,,\n"
                   "4500,,raw_syscalls:sys_enter,8000000,100.00,,\n"
                   "<not counted>,,syscalls:sys_enter_writev,0,0.00,,\n"
                   "1800,,syscalls:sys_enter_write,8000000,100.00,,\n")
    counts = bench._finish_counts((_Done(), csv), 9.0)
    assert counts == {"context_switches": 100.0, "syscalls": 500.0, "write": 200.0}
    assert bench._finish_counts((_Done(), tmp_path / "missing.csv"), 9.0) is None


def _row(tree: str, cpu: float, **extra: object) -> dict[str, object]:
    return {"mode": "proxy", "rate": 30, "clients": 32, "shaper_tree": tree, "cpu_pct_core": cpu,
            "goodput_pct_median": 100.0, "window_pct_min": 99.0, "window_pct_max": 101.0, "loadavg_1m": 1.0,
            **extra}


def test_medians_split_user_and_system_time_and_keep_old_rows() -> None:
    rows = [_row("current", 40.0, cpu_user_pct_core=22.0, cpu_sys_pct_core=18.0,
                 proxy_events_per_s={"write": 6000.0}),
            _row("current", 44.0, cpu_user_pct_core=24.0, cpu_sys_pct_core=20.0,
                 proxy_events_per_s={"write": 6400.0}),
            _row("current", 42.0),  # a row without the split (an older tree's benchmark, or no perf)
            _row("current-q10ms", 30.0)]
    medians = {m["shaper_tree"]: m for m in bench._cpu_medians(rows)}
    cur = medians["current"]
    assert cur["trials"] == 3 and cur["cpu_pct_core_median"] == 42.0
    assert cur["cpu_user_pct_core_median"] == 23.0 and cur["cpu_sys_pct_core_median"] == 19.0
    assert cur["events_per_s_median"] == {"write": 6200.0}
    q10 = medians["current-q10ms"]
    assert q10["cpu_user_pct_core_median"] is None and q10["events_per_s_median"] == {}


def test_another_tree_runs_its_own_shaper(tmp_path) -> None:
    """`--baseline-src` / `--also-src`: the proxy process imports the other tree's fedbw, not this
    checkout's. (It did not: `python -m` puts the working directory ahead of PYTHONPATH, and from the
    checkout's root every "baseline" was this tree.)"""
    from fedbw.processes import Supervisor

    service = tmp_path / "fedbw" / "shaper" / "service.py"
    service.parent.mkdir(parents=True)
    (tmp_path / "fedbw" / "__init__.py").write_text("")
    service.parent.joinpath("__init__.py").write_text("")
    service.write_text("import fedbw\nprint('FROM ' + fedbw.__file__, flush=True)\n")
    with Supervisor() as sup:
        child = bench._spawn_shaper(sup, 9, [{"id": "c0", "link": {"up_mbps": 30.0, "down_mbps": 30.0}}],
                                    "asyncio", None, src=tmp_path)
        line = child.wait_for_line("FROM ", 30.0)
    assert line.text.split(" ", 1)[1] == str(tmp_path / "fedbw" / "__init__.py")


def test_also_src_wants_label_and_a_tree(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["shaper.py", "--also-src", f"x={tmp_path}", "--only", "30x1", "--no-kernel"])
    assert bench.main() == 2
    assert "--also-src wants LABEL=DIR" in capsys.readouterr().err
