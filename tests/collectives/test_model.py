"""The model's AllReduce rows: the netmodel's numbers for a catalog fabric, flat or hierarchical."""

from __future__ import annotations

import pytest

from fedbw.catalog import get_fabric
from fedbw.collectives.model import allreduce_rows
from fedbw.errors import CatalogError, ConfigError
from fedbw.netmodel import allreduce, best_allreduce, hierarchical_allreduce


def test_rows_are_the_netmodels_best_algorithm() -> None:
    f = get_fabric("ib-ndr400")
    rows = allreduce_rows([1024, 2**30], [2, 8], "ib-ndr400")
    assert [(r.ranks, r.size_bytes) for r in rows] == [(2, 1024), (2, 2**30), (8, 1024), (8, 2**30)]
    for r in rows:
        e = best_allreduce(r.size_bytes, r.ranks, f.busbw_gbps, f.alpha_us * 1e-6)
        assert r.time_s == e.time_s and r.algorithm == e.algorithm and r.busbw_gbps == e.busbw_gbps


def test_fixed_algorithm_and_hierarchy() -> None:
    f = get_fabric("eth-1g")
    (ring,) = allreduce_rows([2**20], [4], "eth-1g", "ring")
    assert ring.time_s == allreduce(2**20, 4, f.busbw_gbps, f.alpha_us * 1e-6, "ring").time_s
    nv, ib = get_fabric("nvlink4"), get_fabric("ib-ndr400")
    inside, across = allreduce_rows([2**30], [8, 16], "ib-ndr400", node_fabric="nvlink4")
    assert inside.fabric == "nvlink4" and across.fabric == "nvlink4+ib-ndr400"
    assert across.time_s == hierarchical_allreduce(2**30, 2, 8, nv.busbw_gbps, nv.alpha_us * 1e-6, ib.busbw_gbps,
                                                   ib.alpha_us * 1e-6).time_s


def test_bad_requests() -> None:
    with pytest.raises(ConfigError, match="--algorithm"):
        allreduce_rows([8], [2], "eth-1g", "butterfly")
    with pytest.raises(ConfigError, match="whole number"):
        allreduce_rows([8], [12], "ib-ndr400", node_fabric="nvlink4")
    with pytest.raises(CatalogError):
        allreduce_rows([8], [2], "eth-3g")
