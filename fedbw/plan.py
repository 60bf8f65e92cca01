"""config → plan: everything an engine needs, resolved once and deterministically from the seed.

The plan fixes which link each client has, how much data and compute it gets, and which clients
each round samples — so estimate, simulate and emulate run the *same* federation and their records
can be compared line by line.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from functools import cached_property

from fedbw import catalog
from fedbw.catalog.links import TCP_ETHERNET_EFFICIENCY, LinkProfile
from fedbw.config import ExperimentConfig
from fedbw.netmodel import ClientLink, MessageSizes, round_exchanges

#: scikit-learn's digits: 1,797 samples of 8×8 images.
DIGITS_SAMPLES = 1797
SYNTHETIC_SAMPLES_PER_CLIENT = 64


@dataclass(frozen=True)
class ClientPlan:
    client_id: int
    profile: str  #: catalog name, or "custom" when an override changed its rates
    up_mbps: float  #: line rates as configured; payload rates below
    down_mbps: float
    rtt_ms: float
    jitter_ms: float
    tcp_efficiency: float
    num_samples: int
    est_compute_s: float  #: analytic training time from the device profile

    @property
    def link(self) -> ClientLink:
        return ClientLink(self.up_mbps * self.tcp_efficiency, self.down_mbps * self.tcp_efficiency,
                          self.rtt_ms / 1000.0)


@dataclass
class Plan:
    config: ExperimentConfig
    model: catalog.ModelSpec
    clients: list[ClientPlan]
    num_arrays: int
    _samples: dict[int, list[int]] = field(default_factory=dict, repr=False)

    @property
    def rounds(self) -> int:
        return self.config.training.rounds

    def sampled_clients(self, round_index: int) -> list[int]:
        """Clients trained in round ``round_index`` (1-based): a seeded draw without replacement."""
        if round_index not in self._samples:
            rng = random.Random(f"{self.config.seed}:sample:{round_index}")
            ids = sorted(rng.sample(range(self.config.clients.total), self.config.clients.per_round))
            self._samples[round_index] = ids
        return self._samples[round_index]

    def predicted_exchanges(self, round_index: int) -> list[MessageSizes]:
        cfg = self.config
        sa = cfg.privacy.secagg
        return round_exchanges(
            self.model.params, self.num_arrays, round_index,
            codec=cfg.compression.codec, topk_fraction=cfg.compression.topk_fraction,
            secagg=sa.mode if sa.enabled else "off", num_neighbours=sa.num_shares - 1,
            modulus_range=sa.modulus_range,
        )

    @cached_property
    def profiles_used(self) -> list[str]:
        return sorted({c.profile for c in self.clients})


def build_plan(cfg: ExperimentConfig) -> Plan:
    if cfg.privacy.dp.enabled:
        # a max_epsilon below one round's ε fails here, before any run directory or process exists
        from fedbw.fl.privacy.accounting import accountant_from_config

        accountant_from_config(cfg)
    model = catalog.get_model(cfg.model.name)
    device = catalog.get_device_profile(cfg.clients.device_profile)
    samples = samples_per_client(cfg, model)
    steps_samples = (cfg.training.local_steps * cfg.training.batch_size if cfg.training.local_steps
                     else cfg.training.local_epochs * samples)
    compute_s = steps_samples * model.training_flops_per_sample / (device.effective_tflops * 1e12)
    profiles = assign_profiles(cfg)
    overrides = {o.client: o for o in cfg.network.overrides}
    clients = []
    for cid in range(cfg.clients.total):
        prof: LinkProfile = catalog.get_link_profile(profiles[cid])
        name, up, down, rtt, jitter = prof.name, prof.up_mbps, prof.down_mbps, prof.rtt_ms, prof.jitter_ms
        if (o := overrides.get(cid)) is not None:
            if o.profile:
                p = catalog.get_link_profile(o.profile)
                name, up, down, rtt, jitter = p.name, p.up_mbps, p.down_mbps, p.rtt_ms, p.jitter_ms
            if any(v is not None for v in (o.up_mbps, o.down_mbps, o.rtt_ms, o.jitter_ms)):
                name = f"{name}*"
            up = o.up_mbps if o.up_mbps is not None else up
            down = o.down_mbps if o.down_mbps is not None else down
            rtt = o.rtt_ms if o.rtt_ms is not None else rtt
            jitter = o.jitter_ms if o.jitter_ms is not None else jitter
        clients.append(ClientPlan(cid, name, up, down, rtt, jitter, TCP_ETHERNET_EFFICIENCY, samples, compute_s))
    return Plan(cfg, model, clients, num_arrays=model.num_arrays)


def samples_per_client(cfg: ExperimentConfig, model: catalog.ModelSpec) -> int:
    if cfg.data.samples_per_client:
        return cfg.data.samples_per_client
    if resolve_dataset(cfg, model) == "digits":
        return max(1, int(DIGITS_SAMPLES * (1 - cfg.data.test_fraction)) // cfg.clients.total)
    return SYNTHETIC_SAMPLES_PER_CLIENT


def resolve_dataset(cfg: ExperimentConfig, model: catalog.ModelSpec) -> str:
    return model.dataset if cfg.data.dataset == "auto" else cfg.data.dataset


def assign_profiles(cfg: ExperimentConfig) -> list[str]:
    """Largest-remainder split of clients over the mix, then a seeded shuffle over client ids."""
    total = cfg.clients.total
    shares = [m.share for m in cfg.network.mix]
    weight = sum(shares)
    exact = [s / weight * total for s in shares]
    counts = [math.floor(e) for e in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: (counts[i] - exact[i], i))
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    names = [m.profile for m, n in zip(cfg.network.mix, counts) for _ in range(n)]
    random.Random(f"{cfg.seed}:profiles").shuffle(names)
    return names
