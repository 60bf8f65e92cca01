"""The questions `fedbw estimate` and `fedbw sweep` answer, built on the analytic engine.

How long is one round of this model on each uplink profile, how much of it is communication, and
what would one AllReduce of the same model cost on each data-center fabric?
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fedbw.config import ExperimentConfig, config_from_dict, config_to_dict, load_config
from fedbw.engines.estimate import (FabricEstimate, ProfileEstimate, estimate_fabrics, estimate_profiles,
                                    steady_round)
from fedbw.errors import ConfigError
from fedbw.plan import build_plan
from fedbw.tomlvalue import format_value, parse_value

DEFAULT_COMPARE_PROFILES = ["home-30", "home-50", "home-80"]


@dataclass
class EstimateReport:
    config: ExperimentConfig
    model: str
    params: int
    clients_per_round: int
    round_index: int
    profiles: list[ProfileEstimate]
    fabrics: list[FabricEstimate]

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "params": self.params, "clients_per_round": self.clients_per_round,
                "round": self.round_index, "secagg": self.secagg_label, "codec": self.config.compression.codec,
                "profiles": [asdict(p) for p in self.profiles],
                "fabrics": [asdict(f) | {"fl_round_over_allreduce": self.ratio(f)} for f in self.fabrics]}

    @property
    def secagg_label(self) -> str:
        sa = self.config.privacy.secagg
        return sa.mode if sa.enabled else "off"

    def ratio(self, f: FabricEstimate) -> float | None:
        """Slowest profile's round time over this fabric's AllReduce time."""
        if not self.profiles or f.time_s <= 0:
            return None
        return max(p.round_time_s for p in self.profiles) / f.time_s


def estimate_report(config: Path | None, *, model: str | None = None, profiles: list[str] | None = None,
                    fabrics: list[str] | None = None, ranks: int | None = None, clients_per_round: int | None = None,
                    secagg: str | None = None, codec: str | None = None,
                    overrides: list[str] | None = None) -> EstimateReport:
    sets = list(overrides or [])
    if model:
        sets.append(f"model.name={format_value(model)}")
    if ranks is not None:
        sets.append(f"datacenter.ranks={ranks}")
    if fabrics:
        sets.append("datacenter.fabrics=[" + ", ".join(format_value(f) for f in fabrics) + "]")
    if clients_per_round is not None:
        sets.append(f"clients.per_round={clients_per_round}")
        sets.append(f"clients.total={clients_per_round}")
    if secagg is not None:
        if secagg not in ("off", "stock", "packed"):
            raise ConfigError(f"--secagg must be off, stock or packed (got {secagg!r})")
        sets.append(f"privacy.secagg.enabled={'false' if secagg == 'off' else 'true'}")
        if secagg != "off":
            sets.append(f"privacy.secagg.mode={format_value(secagg)}")
    if codec is not None:
        sets.append(f"compression.codec={format_value(codec)}")
    sets.append('engine="estimate"')
    base: dict[str, Any] = config_to_dict(load_config(config)) if config else {}
    cfg = config_from_dict(base, sets, source=str(config) if config else "estimate")
    plan = build_plan(cfg)
    chosen = profiles or ([m.profile for m in cfg.network.mix] if config else DEFAULT_COMPARE_PROFILES)
    return EstimateReport(cfg, plan.model.name, plan.model.params, cfg.clients.per_round, steady_round(plan),
                          estimate_profiles(plan, chosen),
                          estimate_fabrics(plan.model.params, cfg.datacenter.fabrics, cfg.datacenter.ranks,
                                           cfg.datacenter.grad_bytes_per_value))


# ------------------------------------------------------------------------------------------- sweeps

#: Shorthand sweep parameters that act on every client's link rather than on one config key.
LINK_PARAMS = ("up_mbps", "down_mbps", "rtt_ms")


@dataclass(frozen=True)
class SweepPoint:
    value: Any
    round_time_s: float
    comm_time_s: float
    comm_fraction: float
    bandwidth_bound: bool
    bytes_up_per_client: float
    bytes_down_per_client: float


def sweep_values(values: str | None, range_: str | None) -> list[Any]:
    """Parse ``--values a,b,c`` or ``--range start:stop:count``."""
    if (values is None) == (range_ is None):
        raise ConfigError("give exactly one of --values a,b,c or --range start:stop:count")
    if values is not None:
        return [parse_value(v.strip()) for v in values.split(",")]
    parts = range_.split(":") if range_ else []
    try:
        start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        raise ConfigError(f"--range {range_!r}: write start:stop:count, e.g. --range 10:100:10") from None
    if count < 1 or count > 100_000:
        raise ConfigError("--range count must be between 1 and 100000")
    if count == 1:
        return [start]
    return [start + (stop - start) * i / (count - 1) for i in range(count)]


def run_sweep(config: Path, param: str, points: list[Any], overrides: list[str] | None = None) -> list[SweepPoint]:
    """Estimate one steady-state round per value of ``param`` (a config key or up_mbps/down_mbps/rtt_ms)."""
    from fedbw.engines.estimate import estimate_round

    base = config_to_dict(load_config(config, overrides))
    base["engine"] = "estimate"
    rows = []
    for value in points:
        if param in LINK_PARAMS:
            cfg = config_from_dict(base, source=str(config))
            plan = build_plan(cfg)
            plan.clients = [_with_link(c, param, float(value)) for c in plan.clients]
        else:
            cfg = config_from_dict(base, [f"{param}={format_value(value)}"], source=f"{config} ({param}={value})")
            plan = build_plan(cfg)
        r = steady_round(plan)
        tl = estimate_round(plan, r)
        first = tl.client_rows(plan.sampled_clients(r)[0])
        rows.append(SweepPoint(value, tl.round_time_s, tl.comm_time_s, tl.comm_fraction, tl.bandwidth_bound,
                               sum(t.bytes_up for t in first), sum(t.bytes_down for t in first)))
    return rows


def _with_link(client, param: str, value: float):
    from dataclasses import replace

    if value < 0 or (param != "rtt_ms" and value == 0):
        raise ConfigError(f"{param} must be positive, got {value}")
    return replace(client, access=replace(client.access, **{param: value}))


# --------------------------------------------------------------------------------- AllReduce tables


@dataclass(frozen=True)
class AllReduceRow:
    fabric: str
    size_bytes: float
    ranks: int
    algorithm: str
    time_s: float
    algbw_gbps: float
    busbw_gbps: float


def parse_sizes(text: str) -> list[int]:
    """nccl-tests' size sweep: ``begin:end:factor`` (``8:128M:2``) or one size; K/M/G are powers of 1024."""
    def one(t: str) -> int:
        units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
        t = t.strip().upper().removesuffix("B")
        scale = units.get(t[-1:], 1)
        num = t[:-1] if t[-1:] in units else t
        try:
            value = float(num) * scale
        except ValueError:
            raise ConfigError(f"cannot read size {text!r}; write e.g. 128M or 8:1G:2") from None
        if value <= 0:
            raise ConfigError(f"sizes must be positive, got {text!r}")
        return int(value)

    parts = text.split(":")
    if len(parts) == 1:
        return [one(parts[0])]
    if len(parts) != 3:
        raise ConfigError(f"--sizes {text!r}: write one size or begin:end:factor, e.g. 8:128M:2")
    begin, end = one(parts[0]), one(parts[1])
    try:
        factor = float(parts[2])
    except ValueError:
        raise ConfigError(f"--sizes {text!r}: the factor must be a number > 1") from None
    if factor <= 1 or end < begin:
        raise ConfigError(f"--sizes {text!r}: need begin ≤ end and a factor > 1")
    out, size = [], float(begin)
    while size <= end * (1 + 1e-9) and len(out) < 200:
        out.append(int(size))
        size *= factor
    return out


def parse_ranks(text: str) -> list[int]:
    """``8``, ``2,4,8`` or ``2:1024`` (powers of two from 2 to 1024)."""
    try:
        if ":" in text:
            lo, hi = (int(x) for x in text.split(":"))
            out, r = [], lo
            while r <= hi:
                out.append(r)
                r *= 2
        else:
            out = [int(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(f"--ranks {text!r}: write 8, 2,4,8 or 2:1024") from None
    if not out or any(r < 2 for r in out):
        raise ConfigError(f"--ranks {text!r}: every rank count must be ≥ 2")
    return out


def allreduce_rows(sizes: list[int], ranks: list[int], fabric: str, algorithm: str = "best",
                   node_fabric: str | None = None, gpus_per_node: int = 8) -> list[AllReduceRow]:
    """The α-β model of AllReduce, one row per (ranks, size) as nccl-tests prints them.

    With ``node_fabric`` the ranks are nodes × ``gpus_per_node``: NVLink inside each node,
    ``fabric`` between nodes (hierarchical, as NCCL does); rank counts below one node stay on
    ``node_fabric``.
    """
    from fedbw import catalog
    from fedbw.netmodel import allreduce, best_allreduce, hierarchical_allreduce
    from fedbw.netmodel.collectives import ALGORITHMS

    if algorithm != "best" and algorithm not in ALGORITHMS:
        raise ConfigError(f"--algorithm must be best or one of {', '.join(ALGORITHMS)} (got {algorithm!r})")
    f = catalog.get_fabric(fabric)
    nf = catalog.get_fabric(node_fabric) if node_fabric else None
    rows = []
    for p in ranks:
        for n in sizes:
            if nf is not None and p > gpus_per_node:
                if p % gpus_per_node:
                    raise ConfigError(f"{p} ranks is not a whole number of {gpus_per_node}-GPU nodes")
                e = hierarchical_allreduce(n, p // gpus_per_node, gpus_per_node, nf.busbw_gbps, nf.alpha_us * 1e-6,
                                           f.busbw_gbps, f.alpha_us * 1e-6)
                name = f"{nf.name}+{f.name}"
            else:
                g = nf or f
                e = (best_allreduce(n, p, g.busbw_gbps, g.alpha_us * 1e-6) if algorithm == "best"
                     else allreduce(n, p, g.busbw_gbps, g.alpha_us * 1e-6, algorithm))
                name = g.name
            rows.append(AllReduceRow(name, n, p, e.algorithm, e.time_s, e.algbw_gbps, e.busbw_gbps))
    return rows
