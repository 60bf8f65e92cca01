"""The measured table as data: nccl-tests' bandwidth formulas and the verdict on what bound it."""

from __future__ import annotations

import pytest

from fedbw.collectives.allreduce import verdict
from fedbw.collectives.launch import Placement
from fedbw.collectives.rows import MeasuredRow


def row(size: int, ranks: int, t: float, cores: float = 1.0, busy: float = 0.5) -> MeasuredRow:
    return MeasuredRow(size, size // 4, "float32", ranks, t * 1.1, t, 0, 0, cores, busy, t / 2, t * 0.9)


def test_bandwidths_as_nccl_tests_computes_them() -> None:
    r = row(10**9, 4, 1.0)
    assert r.ip_algbw_gbps == pytest.approx(1.0)
    assert r.ip_busbw_gbps == pytest.approx(1.5)  # × 2(p−1)/p
    assert r.oop_algbw_gbps == pytest.approx(1 / 1.1)
    assert r.fit_residual == pytest.approx(-0.1)
    assert r.to_json()["ip_busbw_gbps"] == pytest.approx(1.5)


class _Linked(Placement):
    link_gbps = 0.125


def test_verdicts() -> None:
    rows = [row(1024, 2, 1e-3), row(10**8, 2, 1.0, cores=1.8, busy=0.97)]  # busbw 0.1 GB/s
    loop = verdict("gloo", Placement(), rows)
    assert loop.bound == "cpu" and "loopback" in loop.note and "1.8 of" in loop.note
    assert verdict("nccl", Placement(), rows).bound == "device"
    assert verdict("gloo", _Linked(), rows).bound == "link"  # 0.1 of 0.125 GB/s ≥ 80 %
    slow = [row(1024, 2, 1e-3), row(10**8, 2, 2.0)]  # busbw 0.05 GB/s: 40 % of the link
    v = verdict("gloo", _Linked(), slow)
    assert v.bound == "cpu" and "40 %" in v.note
