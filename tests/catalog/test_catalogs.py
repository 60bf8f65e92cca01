import pytest

from fedbw.catalog import FABRICS, LINK_PROFILES, get_fabric, get_link_profile
from fedbw.catalog.links import TCP_ETHERNET_EFFICIENCY
from fedbw.errors import CatalogError


def test_home_uplinks_span_30_to_80_mbps_with_faster_downlinks():
    for name, up in (("home-30", 30), ("home-50", 50), ("home-80", 80)):
        p = get_link_profile(name)
        assert p.up_mbps == up and p.down_mbps > p.up_mbps and p.rtt_ms > 0


def test_profiles_carry_the_ethernet_tcp_efficiency():
    assert TCP_ETHERNET_EFFICIENCY == pytest.approx(0.9564, abs=1e-4)
    assert all(p.tcp_efficiency == TCP_ETHERNET_EFFICIENCY for p in LINK_PROFILES.values())


def test_fabric_busbw_within_published_ranges():
    assert 370 <= FABRICS["nvlink4"].busbw_gbps <= 480
    assert 46 <= FABRICS["ib-ndr400"].busbw_gbps <= 48
    assert FABRICS["ib-hdr200"].busbw_gbps == pytest.approx(24, rel=0.05)
    assert FABRICS["roce-100g"].busbw_gbps == pytest.approx(12, rel=0.05)
    for f in FABRICS.values():
        assert f.busbw_gbps <= f.line_rate_gbps


def test_unknown_names():
    with pytest.raises(CatalogError, match="home-30"):
        get_link_profile("home30")
    with pytest.raises(CatalogError):
        get_fabric("token-ring")
    assert set(LINK_PROFILES) >= {"home-30", "home-50", "home-80", "mobile-4g", "mobile-5g", "cross-silo-1g"}
