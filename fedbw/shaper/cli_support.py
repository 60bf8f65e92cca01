"""Pure helpers behind ``fedbw shape``: parse addresses, build routes, check upstreams, format lines.

Kept out of the Typer command so they can be tested without a CLI runner and reused by engines.
Link profiles are looked up through a ``profile_lookup(name) -> LinkSpec`` callable passed in, so this
module does not depend on the catalog.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fedbw.errors import FedbwError
from fedbw.shaper.errors import ShaperError
from fedbw.shaper.link import ClientRoute, LinkSpec

ProfileLookup = Callable[[str], LinkSpec]

#: Link keys accepted in a TOML map (top level as defaults, or per client) and as CLI overrides.
LINK_KEYS = (
    "up_mbps", "down_mbps", "rtt_ms", "jitter_ms", "latency_up_ms", "latency_down_ms",
    "jitter_up_ms", "jitter_down_ms", "up_trace", "down_trace", "seed",
)
_TOP_KEYS = {"upstream", "listen_host", "profile", "client", *LINK_KEYS}
_CLIENT_KEYS = {"id", "listen", "port", "upstream", "profile", *LINK_KEYS}


def parse_hostport(text: str, *, flag: str = "--listen", allow_port_zero: bool = False) -> tuple[str, int]:
    """``"HOST:PORT"`` (or ``"[v6]:PORT"``) → (host, port), with an error that names the flag."""
    if not isinstance(text, str) or ":" not in text:
        raise ShaperError(f"{flag} {text!r} must look like HOST:PORT, e.g. 127.0.0.1:9100")
    host, _, port_text = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        raise ShaperError(f"{flag} {text!r} has no host; write e.g. 127.0.0.1:{port_text or 9100}")
    try:
        port = int(port_text)
    except ValueError:
        raise ShaperError(f"{flag} {text!r}: port {port_text!r} is not a number") from None
    low = 0 if allow_port_zero else 1
    if not low <= port <= 65535:
        raise ShaperError(f"{flag} {text!r}: port must be in {low}..65535")
    return host, port


def link_from_options(
    profile: str | None = None,
    profile_lookup: ProfileLookup | None = None,
    **overrides: Any,
) -> LinkSpec:
    """A LinkSpec from a named profile and/or explicit values (None values are ignored).

    ``rtt_ms`` sets both one-way latencies to half of it; ``jitter_ms`` is round-trip jitter, ±half
    each way (as :meth:`LinkSpec.from_rtt`). Explicit one-way keys win over those.
    """
    unknown = set(overrides) - set(LINK_KEYS)
    if unknown:
        raise ShaperError(f"unknown link option(s) {', '.join(sorted(unknown))}; known: {', '.join(LINK_KEYS)}")
    values = {k: v for k, v in overrides.items() if v is not None}
    if profile is not None:
        if profile_lookup is None:
            raise ShaperError(f"profile {profile!r} given but no profile catalog is available; give rates instead")
        try:
            base = profile_lookup(profile)
        except FedbwError:
            raise
        except LookupError:
            raise ShaperError(f"unknown link profile {profile!r}; see `fedbw profiles`") from None
        if not isinstance(base, LinkSpec):
            raise ShaperError(f"profile lookup for {profile!r} returned {type(base).__name__}, not a LinkSpec")
        fields: dict[str, Any] = dataclasses.asdict(base)
        fields["up_trace"], fields["down_trace"] = base.up_trace, base.down_trace
    else:
        missing = [k for k in ("up_mbps", "down_mbps") if k not in values]
        if missing:
            flags = ", ".join("--" + m.replace("_", "-") for m in missing)
            raise ShaperError(f"give a link profile (--profile home-30) or both rates; missing {flags}")
        fields = {}
    if "rtt_ms" in values:
        rtt = _float("rtt_ms", values.pop("rtt_ms"))
        if rtt < 0 or math.isinf(rtt):
            raise ShaperError(f"rtt_ms must be a finite number of ms >= 0, got {rtt:g}")
        fields["latency_up_ms"] = fields["latency_down_ms"] = rtt / 2.0
    if "jitter_ms" in values:
        jitter = _float("jitter_ms", values.pop("jitter_ms"))
        if jitter < 0 or math.isinf(jitter):
            raise ShaperError(f"jitter_ms must be a finite number of ms >= 0, got {jitter:g}")
        fields["jitter_up_ms"] = fields["jitter_down_ms"] = jitter / 2.0
    for key in ("up_trace", "down_trace"):
        if key in values:
            values[key] = _trace(key, values[key])
    fields.update(values)
    return LinkSpec(**fields)


def consecutive_routes(
    listen: str,
    upstream: str,
    n_clients: int,
    link: LinkSpec,
    *,
    id_prefix: str = "client",
) -> list[ClientRoute]:
    """``n_clients`` clients on ports P, P+1, … of the ``listen`` host, all to one upstream.

    Each client gets its own link (same spec, jitter seeds differ through the client id).
    """
    if isinstance(n_clients, bool) or not isinstance(n_clients, int) or n_clients < 1:
        raise ShaperError(f"--clients must be a whole number >= 1, got {n_clients!r}")
    host, first_port = parse_hostport(listen, flag="--listen", allow_port_zero=n_clients == 1)
    up_host, up_port = parse_hostport(upstream, flag="--upstream")
    if first_port + n_clients - 1 > 65535:
        raise ShaperError(f"--listen port {first_port} + {n_clients} clients runs past 65535; pick a lower port")
    width = len(str(n_clients - 1))
    return [
        ClientRoute(f"{id_prefix}{i:0{width}d}", host, first_port + i if first_port else 0, up_host, up_port, link)
        for i in range(n_clients)
    ]


def load_routes_toml(path: str | os.PathLike[str], profile_lookup: ProfileLookup | None = None) -> list[ClientRoute]:
    """Routes from a TOML client map (schema in docs/shaper.md)::

        upstream = "127.0.0.1:9092"   # default for every client
        listen_host = "127.0.0.1"     # default host for `port =`
        profile = "home-30"           # default link; link keys here are defaults too

        [[client]]
        id = "c0"
        listen = "127.0.0.1:9100"     # or: port = 9100   (omit both for a free port)
        up_mbps = 40                  # overrides; also down_mbps, rtt_ms, jitter_ms, latency_*_ms,
                                      # jitter_*_ms, up_trace = [[0, 40], [30, 0], [35, 40]], seed
    A client that names its own ``profile`` ignores the top-level link defaults.
    """
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError:
        raise ShaperError(f"client map {p} does not exist; fix the path") from None
    except tomllib.TOMLDecodeError as exc:
        raise ShaperError(f"client map {p} is not valid TOML: {exc}") from None
    return routes_from_mapping(doc, profile_lookup, source=str(p))


def routes_from_mapping(
    doc: Mapping[str, Any], profile_lookup: ProfileLookup | None = None, *, source: str = "client map"
) -> list[ClientRoute]:
    """Routes from an already-parsed client map (same schema as :func:`load_routes_toml`)."""
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise ShaperError(
            f"{source}: unknown top-level key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_TOP_KEYS))}"
        )
    clients = doc.get("client")
    if not isinstance(clients, list) or not clients:
        raise ShaperError(f"{source}: no clients; add one or more [[client]] tables")
    listen_host = doc.get("listen_host", "127.0.0.1")
    top_link = {k: doc[k] for k in LINK_KEYS if k in doc}
    routes: list[ClientRoute] = []
    for i, entry in enumerate(clients):
        where = f"{source}: client[{i}]"
        if not isinstance(entry, Mapping):
            raise ShaperError(f"{where} must be a table ([[client]])")
        cid = entry.get("id", f"client{i}")
        where = f"{source}: client[{i}] (id {cid!r})"
        bad = set(entry) - _CLIENT_KEYS
        if bad:
            known = ", ".join(sorted(_CLIENT_KEYS))
            raise ShaperError(f"{where}: unknown key(s) {', '.join(sorted(bad))}; known: {known}")
        try:
            if "listen" in entry and "port" in entry:
                raise ShaperError("give either listen = \"HOST:PORT\" or port = N, not both")
            if "listen" in entry:
                host, port = parse_hostport(entry["listen"], flag="listen", allow_port_zero=True)
            else:
                host, port = listen_host, entry.get("port", 0)
            upstream = entry.get("upstream", doc.get("upstream"))
            if upstream is None:
                raise ShaperError("no upstream; set upstream = \"HOST:PORT\" at the top or in the client")
            up_host, up_port = parse_hostport(upstream, flag="upstream")
            own = {k: entry[k] for k in LINK_KEYS if k in entry}
            if "profile" in entry:
                link = link_from_options(entry["profile"], profile_lookup, **own)
            else:
                link = link_from_options(doc.get("profile"), profile_lookup, **{**top_link, **own})
            routes.append(ClientRoute(str(cid), host, port, up_host, up_port, link))
        except ShaperError as exc:
            raise ShaperError(f"{where}: {exc}") from None
    return routes


def routes_from_options(
    *,
    listen: str,
    upstream: str | None,
    profile: str | None = None,
    profile_lookup: ProfileLookup | None = None,
    clients: int = 1,
    map_file: str | os.PathLike[str] | None = None,
    **link_overrides: Any,
) -> list[ClientRoute]:
    """Everything ``fedbw shape`` needs in one call: the map-file form or the consecutive-port form."""
    if map_file is not None:
        given = [k for k, v in link_overrides.items() if v is not None]
        if given or profile is not None or upstream is not None or clients != 1:
            raise ShaperError(
                "--map describes every client; drop --upstream/--profile/--clients/rate options or the map"
            )
        return load_routes_toml(map_file, profile_lookup)
    if upstream is None:
        raise ShaperError("--upstream HOST:PORT is required (where the server, e.g. the SuperLink, listens)")
    link = link_from_options(profile, profile_lookup, **link_overrides)
    return consecutive_routes(listen, upstream, clients, link)


def check_upstreams(routes: Sequence[ClientRoute], *, timeout_s: float = 2.0) -> None:
    """Connect once to each distinct upstream (blocking); raise ShaperError naming the first missing one."""
    import asyncio

    from fedbw.shaper.proxy import probe_upstream

    for host, port in dict.fromkeys((r.upstream_host, r.upstream_port) for r in routes):
        asyncio.run(probe_upstream(host, port, timeout_s=timeout_s))


def _fmt_mbps(mbps: float) -> str:
    return "unshaped" if mbps == math.inf else f"{mbps:.4g} Mbps"


def describe_routes(routes: Sequence[ClientRoute], ports: Mapping[str, int]) -> list[str]:
    """One line per client for the CLI: where it listens, where it goes, what its link is."""
    lines = []
    for r in routes:
        link = r.link
        trace = " trace" if link.up_trace or link.down_trace else ""
        lines.append(
            f"{r.client_id}: {r.listen_host}:{ports.get(r.client_id, r.listen_port)}"
            f" -> {r.upstream_host}:{r.upstream_port}"
            f"  up {_fmt_mbps(link.up_mbps)} +{link.latency_up_ms:g}±{link.jitter_up_ms:g} ms"
            f"  down {_fmt_mbps(link.down_mbps)} +{link.latency_down_ms:g}±{link.jitter_down_ms:g} ms{trace}"
        )
    return lines


def describe_totals(snapshot: Mapping[str, Any]) -> list[str]:
    """One line per client from a ledger snapshot: bytes each way and connections."""
    lines = []
    for cid, c in snapshot["clients"].items():
        n = c["connections_total"]
        lines.append(
            f"{cid}: up {c['up']['bytes_out']} B, down {c['down']['bytes_out']} B, "
            f"{n} connection{'' if n == 1 else 's'} ({c['connections_failed']} failed)"
        )
    return lines


def _float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ShaperError(f"{name} must be a number, got {value!r}")
    out = float(value)
    if math.isnan(out):
        raise ShaperError(f"{name} is NaN; give a number")
    return out


def _trace(name: str, value: Any) -> tuple[tuple[float, float], ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ShaperError(f"{name} must be a list of [t_s, mbps] pairs, got {value!r}")
    out = []
    for i, step in enumerate(value):
        if isinstance(step, str) or not isinstance(step, Sequence) or len(step) != 2:
            raise ShaperError(f"{name}[{i}] must be a [t_s, mbps] pair, got {step!r}")
        out.append((step[0], step[1]))
    return tuple(out)
