"""LinkSpec / ClientRoute / Shaper argument validation: errors name the field to change."""

from __future__ import annotations

import dataclasses
import math

import pytest

from fedbw.errors import FedbwError
from fedbw.shaper import ClientRoute, LinkSpec, Shaper, ShaperError


def test_valid_spec_and_defaults():
    spec = LinkSpec(30, 300)
    assert spec.up_mbps == 30.0 and spec.latency_up_ms == 0.0 and spec.up_trace == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.up_mbps = 1  # type: ignore[misc]


def test_from_rtt_splits_rtt_and_jitter_evenly():
    spec = LinkSpec.from_rtt(30, 300, 25, 3, seed=7)
    assert (spec.latency_up_ms, spec.latency_down_ms) == (12.5, 12.5)
    assert (spec.jitter_up_ms, spec.jitter_down_ms) == (1.5, 1.5)
    assert spec.seed == 7


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"up_mbps": 0}, "up_mbps"),
        ({"up_mbps": -5}, "up_mbps"),
        ({"down_mbps": math.nan}, "down_mbps"),
        ({"down_mbps": "fast"}, "down_mbps"),
        ({"up_mbps": True}, "up_mbps"),
        ({"latency_up_ms": -1}, "latency_up_ms"),
        ({"jitter_down_ms": math.inf}, "jitter_down_ms"),
        ({"up_trace": ((0, 30), (0, 10))}, "up_trace"),
        ({"up_trace": ((1, -3),)}, "up_trace"),
        ({"down_trace": ((1, math.nan),)}, "down_trace"),
        ({"down_trace": ((1, 2, 3),)}, "down_trace"),
        ({"down_trace": 5}, "down_trace"),
        ({"seed": 1.5}, "seed"),
    ],
)
def test_invalid_fields_name_the_field(kwargs, field):
    args = {"up_mbps": 30, "down_mbps": 300, **kwargs}
    with pytest.raises(ShaperError, match=field) as info:
        LinkSpec(**args)
    assert isinstance(info.value, FedbwError)


def test_zero_rate_allowed_inside_trace_and_traces_normalized():
    spec = LinkSpec(30, 300, up_trace=[[0, 30], [5, 0], [8, 30]])
    assert spec.up_trace == ((0.0, 30.0), (5.0, 0.0), (8.0, 30.0))


def test_zero_rate_error_says_how_to_take_link_down():
    with pytest.raises(ShaperError, match="trace step with rate 0"):
        LinkSpec(0, 300)


def test_infinite_rate_means_unshaped():
    assert LinkSpec(math.inf, 300).up_mbps == math.inf


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"client_id": ""}, "client_id"),
        ({"listen_port": 70000}, "listen_port"),
        ({"upstream_port": 0}, "upstream_port"),
        ({"listen_host": ""}, "listen_host"),
        ({"link": "home-30"}, "link"),
    ],
)
def test_route_validation(kwargs, field):
    args = dict(client_id="c0", listen_host="127.0.0.1", listen_port=0, upstream_host="127.0.0.1",
                upstream_port=9000, link=LinkSpec(30, 300))
    args.update(kwargs)
    with pytest.raises(ShaperError, match=field):
        ClientRoute(**args)


def _route(cid: str, host: str = "127.0.0.1", port: int = 0) -> ClientRoute:
    return ClientRoute(cid, host, port, "127.0.0.1", 9000, LinkSpec(30, 300))


def test_shaper_rejects_duplicates_and_non_loopback():
    with pytest.raises(ShaperError, match="appears twice"):
        Shaper([_route("a"), _route("a")])
    with pytest.raises(ShaperError, match="two clients"):
        Shaper([_route("a", port=9100), _route("b", port=9100)])
    with pytest.raises(ShaperError, match="--allow-non-loopback"):
        Shaper([_route("a", host="0.0.0.0")])
    Shaper([_route("a", host="0.0.0.0")], allow_non_loopback=True)  # explicit opt-in is accepted
    with pytest.raises(ShaperError, match="no client routes"):
        Shaper([])
    with pytest.raises(ShaperError, match="sock_buf_bytes"):
        Shaper([_route("a")], sock_buf_bytes=10)


def test_a_dilated_link_is_k_times_slower_and_longer() -> None:
    from fedbw.shaper import LinkSpec
    from fedbw.timewarp import NO_DILATION, Dilation

    link = LinkSpec(up_mbps=30, down_mbps=300, latency_up_ms=10, latency_down_ms=12, jitter_up_ms=2,
                    up_trace=((5.0, 0.0), (7.0, 30.0)), seed=3)
    d = link.dilated(Dilation(4))
    assert (d.up_mbps, d.down_mbps, d.latency_up_ms, d.latency_down_ms, d.jitter_up_ms) == (7.5, 75, 40, 48, 8)
    assert d.up_trace == ((20.0, 0.0), (28.0, 7.5)) and d.seed == 3
    assert link.dilated(NO_DILATION) == link
    assert LinkSpec.from_dict(d.to_dict()) == d
    for bad in (0.5, float("inf")):
        with pytest.raises(ValueError, match="dilation factor"):
            Dilation(bad)
