"""Helpers behind `fedbw shape`: address parsing, route building, TOML map, upstream checks."""

from __future__ import annotations

import socket

import pytest

from fedbw.errors import CatalogError
from fedbw.shaper import LinkSpec, ShaperError
from fedbw.shaper.cli_support import (
    check_upstreams,
    consecutive_routes,
    describe_routes,
    describe_totals,
    link_from_options,
    load_routes_toml,
    parse_hostport,
    routes_from_options,
)

PROFILES = {"home-30": LinkSpec.from_rtt(30, 300, 25, 3), "home-80": LinkSpec.from_rtt(80, 1000, 15, 2)}


def lookup(name: str) -> LinkSpec:
    return PROFILES[name]


def catalog_lookup(name: str) -> LinkSpec:
    raise CatalogError(f"unknown link profile {name!r}")


def test_parse_hostport():
    assert parse_hostport("127.0.0.1:9100") == ("127.0.0.1", 9100)
    assert parse_hostport("[::1]:80", flag="--upstream") == ("::1", 80)
    assert parse_hostport("localhost:0", allow_port_zero=True) == ("localhost", 0)
    for bad, msg in [("9100", "HOST:PORT"), (":9100", "no host"), ("h:x", "not a number"),
                     ("h:70000", "65535"), ("h:0", "1..65535")]:
        with pytest.raises(ShaperError, match=msg):
            parse_hostport(bad, flag="--upstream")


def test_link_from_profile_with_overrides():
    spec = link_from_options("home-30", lookup, up_mbps=40, rtt_ms=50, down_mbps=None)
    assert (spec.up_mbps, spec.down_mbps) == (40, 300)
    assert spec.latency_up_ms == spec.latency_down_ms == 25
    assert spec.jitter_up_ms == 1.5  # from the profile


def test_link_errors():
    with pytest.raises(ShaperError, match="--down-mbps"):
        link_from_options(None, lookup, up_mbps=30)
    with pytest.raises(ShaperError, match="unknown link profile 'nope'"):
        link_from_options("nope", lookup)
    with pytest.raises(CatalogError):  # the catalog's own error passes through
        link_from_options("nope", catalog_lookup)
    with pytest.raises(ShaperError, match="up_mbps"):
        link_from_options(None, None, up_mbps=-1, down_mbps=10)
    with pytest.raises(ShaperError, match="rtt_ms"):
        link_from_options("home-30", lookup, rtt_ms=-4)


def test_consecutive_routes():
    routes = consecutive_routes("127.0.0.1:9100", "127.0.0.1:9092", 12, PROFILES["home-30"])
    assert [r.listen_port for r in routes] == list(range(9100, 9112))
    assert routes[0].client_id == "client00" and routes[11].client_id == "client11"
    assert {(r.upstream_host, r.upstream_port) for r in routes} == {("127.0.0.1", 9092)}
    with pytest.raises(ShaperError, match="--clients"):
        consecutive_routes("127.0.0.1:9100", "127.0.0.1:9092", 0, PROFILES["home-30"])
    with pytest.raises(ShaperError, match="65535"):
        consecutive_routes("127.0.0.1:65530", "127.0.0.1:9092", 10, PROFILES["home-30"])
    lines = describe_routes(routes[:1], {"client00": 9100})
    assert lines[0].startswith("client00: 127.0.0.1:9100 -> 127.0.0.1:9092  up 30 Mbps +12.5±1.5 ms")


def test_toml_map(tmp_path):
    path = tmp_path / "clients.toml"
    path.write_text(
        """
upstream = "127.0.0.1:9092"
profile = "home-30"
rtt_ms = 40

[[client]]
id = "a"
port = 9100

[[client]]
id = "b"
listen = "127.0.0.1:9101"
profile = "home-80"

[[client]]
id = "c"
up_mbps = 10
down_mbps = 20
up_trace = [[0, 10], [5, 0], [8, 10]]
upstream = "127.0.0.1:9093"
"""
    )
    a, b, c = load_routes_toml(path, lookup)
    assert (a.listen_host, a.listen_port, a.link.up_mbps, a.link.latency_up_ms) == ("127.0.0.1", 9100, 30, 20)
    assert (b.listen_port, b.link.up_mbps, b.link.latency_up_ms) == (9101, 80, 7.5)  # own profile: no top rtt
    assert (c.upstream_port, c.listen_port, c.link.up_mbps, c.link.up_trace[1]) == (9093, 0, 10, (5.0, 0.0))


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ("upstream = 'h:1'\n", "no clients"),
        ("upstream = 'h:1'\nbogus = 1\n[[client]]\nid='a'\nup_mbps=1\ndown_mbps=1\n", "bogus"),
        ("upstream = 'h:1'\n[[client]]\nid='a'\nup_mbps=1\ndown_mbps=1\nspeed=3\n", r"client\[0\] \(id 'a'\).*speed"),
        ("[[client]]\nid='a'\nup_mbps=1\ndown_mbps=1\n", "no upstream"),
        ("upstream = 'h:1'\n[[client]]\nid='a'\nup_mbps=-1\ndown_mbps=1\n", "up_mbps"),
        ("upstream = 'h:1'\n[[client]]\nid='a'\nup_mbps=1\n", "--down-mbps"),
        ("upstream = [", "not valid TOML"),
    ],
)
def test_toml_map_errors(tmp_path, text, msg):
    path = tmp_path / "m.toml"
    path.write_text(text)
    with pytest.raises(ShaperError, match=msg):
        load_routes_toml(path, lookup)


def test_toml_missing_file(tmp_path):
    with pytest.raises(ShaperError, match="does not exist"):
        load_routes_toml(tmp_path / "none.toml", lookup)


def test_routes_from_options():
    routes = routes_from_options(listen="127.0.0.1:9100", upstream="127.0.0.1:9092", profile="home-30",
                                 profile_lookup=lookup, clients=2, up_mbps=None, down_mbps=None)
    assert len(routes) == 2
    with pytest.raises(ShaperError, match="--upstream"):
        routes_from_options(listen="127.0.0.1:9100", upstream=None, profile="home-30", profile_lookup=lookup)
    with pytest.raises(ShaperError, match="--map describes"):
        routes_from_options(listen="127.0.0.1:9100", upstream="127.0.0.1:1", map_file="x.toml")


def test_check_upstreams_refused_and_ok():
    with socket.socket() as probe:  # a port that nobody listens on
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    routes = consecutive_routes("127.0.0.1:0", f"127.0.0.1:{free_port}", 1, PROFILES["home-30"])
    expected = f"upstream 127.0.0.1:{free_port} refused the connection; start the service first or fix --upstream"
    with pytest.raises(ShaperError, match=expected):
        check_upstreams(routes)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        check_upstreams(consecutive_routes("127.0.0.1:0", f"127.0.0.1:{port}", 1, PROFILES["home-30"]))


def test_describe_totals():
    snap = {"clients": {"a": {"up": {"bytes_out": 10}, "down": {"bytes_out": 20}, "connections_total": 1,
                              "connections_failed": 0}}}
    assert describe_totals(snap) == ["a: up 10 B, down 20 B, 1 connection (0 failed)"]
