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
    from fedbw.engines.estimate import steady_timeline

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
        tl = steady_timeline(plan)  # the rounds before it on the same deployment clock, as estimate runs them
        first = tl.client_rows(plan.sampled_clients(r)[0])
        rows.append(SweepPoint(value, tl.round_time_s, tl.comm_time_s, tl.comm_fraction, tl.bandwidth_bound,
                               sum(t.bytes_up for t in first), sum(t.bytes_down for t in first)))
    return rows


def _with_link(client, param: str, value: float):
    from dataclasses import replace

    if value < 0 or (param != "rtt_ms" and value == 0):
        raise ConfigError(f"{param} must be positive, got {value}")
    return replace(client, access=replace(client.access, **{param: value}))
