"""benchmarks/allreduce_netns.py: the namespace check's pieces, its docs table, and (root) one real row."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("allreduce_netns", ROOT / "benchmarks" / "allreduce_netns.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)  # type: ignore[union-attr]


def _data() -> dict:
    row = {"rate_mbps": 100.0, "ranks": 2, "size_bytes": 4 << 20, "measured_s": 0.37, "model_s": 0.358,
           "error": 0.0335, "busbw_gbps": 0.0113, "link_busbw_gbps": 0.01176, "checked": True, "agrees": True}
    small = row | {"size_bytes": 1024, "checked": False, "agrees": None, "error": -0.01}
    return {"started": "2026-12-01T09:00:00+00:00", "iters": 5, "warmup": 2, "tolerance": 0.1,
            "eth_efficiency": 0.9408, "machine": {"cpu": "AMD EPYC", "usable_cores": 2,
                                                 "packages": {"torch": "2.13.0"}},
            "results": [{"rate_mbps": 100.0, "ranks": 2, "rows": [small, row],
                         "fit": {"alpha_us": 400.0, "busbw_gbps": 0.0115}, "bound_note": "link-bound: …"}]}


def test_not_root_is_a_clear_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench.os, "geteuid", lambda: 1000)
    assert "not root" in bench.unavailable()


def test_compare_uses_alpha_from_the_smallest_row_and_checks_bandwidth_rows() -> None:
    rows = [{"size_bytes": 1024, "ip_time_s": 1e-3, "oop_time_s": 1e-3, "ip_busbw_gbps": 0.0, "oop_wrong": 0,
             "ip_wrong": 0, "cores_busy": 0.1, "machine_busy": 0.5},
            {"size_bytes": 4 << 20, "ip_time_s": 0.40, "oop_time_s": 0.41, "ip_busbw_gbps": 0.01, "oop_wrong": 0,
             "ip_wrong": 0, "cores_busy": 0.1, "machine_busy": 0.5}]
    small, big = bench.compare(100.0, 2, rows)
    assert small["alpha_s"] == pytest.approx(0.5e-3) and small["checked"] is False and small["agrees"] is None
    b = bench.payload_gbps(100.0)
    assert big["model_s"] == pytest.approx(2 * 0.5e-3 + (4 << 20) / (b * 1e9))
    assert big["checked"] is True and big["agrees"] is (abs(big["error"]) <= 0.1)


def test_docs_table_is_rendered_from_the_json(tmp_path: Path) -> None:
    import fedbw.report.doc_tables  # noqa: F401  (registers the tables)
    from fedbw.report.datacenter import netns_markdown
    from fedbw.report.doc_blocks import TABLES

    md = netns_markdown(_data())
    assert "| 100 Mbit/s | 2 | 4.19 MB | 370.00 ms | 358.00 ms | +3.4 % |" in md
    assert "1 of 1 bandwidth-dominated rows agree within ±10 %" in md and "2026-12-01" in md
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "allreduce-netns.json").write_text(json.dumps(_data()))
    assert md in TABLES["datacenter.netns"](tmp_path)  # what `fedbw docs` writes into docs/datacenter.md


@pytest.mark.slow
@pytest.mark.skipif(bench.unavailable() is not None, reason=str(bench.unavailable()))
def test_one_rate_limited_row_and_the_namespaces_are_gone() -> None:
    res = bench.run_one(1000.0, 2, [1024, 8 << 20], iters=2, warmup=1)
    small, big = res["rows"]
    assert big["wrong"] == 0 and big["checked"]
    assert abs(big["error"]) < 0.25  # a sanity bound; the benchmark's table carries the ±10 % claim
    assert res["bound"] == "link"
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert bench.PREFIX not in listed
