"""config → plan: everything an engine and the apps need, resolved once and deterministically from the seed.

The plan fixes which link each client has, how much data and compute it gets, which clients each
round samples, how many rounds the privacy budget lets run and ε after each — so estimate, simulate
and emulate run the *same* federation and their records can be compared line by line. simulate and
emulate hand the serialized plan to Flower's apps (``plan.json``); the apps read it, never rebuild it.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

from fedbw import catalog
from fedbw.config import ExperimentConfig, config_from_dict, config_to_dict
from fedbw.errors import ConfigError
from fedbw.files.versioned import PLAN
from fedbw.links import AccessLink, planned_links, server_link
from fedbw.netmodel.secagg_cost import STAGES as SECAGG_COST_STAGES, client_stage_s, server_stage_s
from fedbw.netmodel import ClientLink, DeploymentClock, FlowerCosts, MessageSizes, ServerLink, round_exchanges
from fedbw.netmodel.flower import costs_from_json
from fedbw.netmodel.close import DROPOUT_STAGE, SecAggDropouts, StageClose
from fedbw.privacy.accounting import plan_budget
from fedbw.privacy.sampling import Sampler
from fedbw.traces import RateSeries, RateTrace

#: scikit-learn's digits: 1,797 samples of 8×8 images.
DIGITS_SAMPLES = 1797
SYNTHETIC_SAMPLES_PER_CLIENT = 64

class ClientPlan(NamedTuple):
    """One client's resolved setup (a named tuple: a plan of 200,000 clients makes 200,000 of them, and a
    frozen dataclass costs three times as much to build; change one with ``_replace``)."""

    client_id: int
    access: AccessLink  #: the client's link as configured (line rates, RTT, jitter, TCP efficiency)
    num_samples: int
    est_compute_s: float  #: analytic training time from the device profile
    cpu_speed: float = 1.0  #: the device's CPU relative to the calibration machine (Flower's own work)

    @property
    def profile(self) -> str:
        return self.access.profile

    @property
    def link(self) -> ClientLink:
        """The network model's link (payload rates)."""
        return self.access.model()


@dataclass
class Plan:
    config: ExperimentConfig
    model: catalog.ModelSpec
    clients: list[ClientPlan]
    num_arrays: int
    samples: list[list[int]]  #: sampled client ids of round r at index r - 1, for every configured round
    rounds: int  #: rounds that run: training.rounds, or fewer when privacy.dp.max_epsilon stops earlier
    epsilons: list[float] | None = None  #: ε after each round that runs (None: DP off)
    stop_reason: str | None = None  #: why the budget ends the run before training.rounds
    device: str | None = None  #: torch device the apps use ("cpu", "cuda"); set by the runner
    costs: FlowerCosts | None = None  #: Flower's deployment costs (None: framework = "none", links only)
    server: ServerLink = ServerLink()  #: the server's shared link
    #: with ``clients.availability`` (fedbw.engines.cohorts): per round, its planned start on the availability
    #: trace, how many clients were on line then, and the sampled clients that go off line before their
    #: training reply (they drop out of that round); None without availability
    round_starts_s: list[float] | None = None
    online: list[int] | None = None
    offline: list[list[int]] | None = None

    @cached_property
    def sampler(self) -> Sampler:
        """What drew :attr:`samples` and tells the accountant how to account for them: the config's sampler,
        built once per plan (a value: the one :func:`build_plan` drew with is equal to it)."""
        return self.config.sampler()

    def sampled_clients(self, round_index: int) -> list[int]:
        """Clients trained in round ``round_index`` (1-based): a seeded draw without replacement."""
        return self.samples[round_index - 1]

    def secagg_dropped(self, round_index: int) -> list[int]:
        """The sampled clients that drop after round ``round_index``'s SecAgg+ share exchange
        (``privacy.secagg.dropout`` of the cohort, rounded; a seeded draw per round; none without it)."""
        sa = self.config.privacy.secagg
        if not (sa.enabled and sa.dropout > 0):
            return []
        ids = self.sampled_clients(round_index)
        k = min(len(ids) - 1, round(sa.dropout * len(ids))) if ids else 0
        return sorted(random.Random(f"{self.config.seed}:secagg-dropout:{round_index}").sample(ids, max(0, k)))

    @property
    def dropout_stage(self) -> str:
        """The stage a planned dropout misses: the round's training stage ("fit", or SecAgg+'s masked-vector
        stage, after the share exchange). Every engine drops there: the model cuts its messages, simulate's
        ServerApp leaves its reply out, emulate stops its SuperNode as the stage's message arrives."""
        return DROPOUT_STAGE if self.config.privacy.secagg.enabled else "fit"

    def dropped(self, round_index: int) -> list[int]:
        """Every sampled client that drops out of round ``round_index``: SecAgg+'s planned dropouts and the
        clients whose on-line time ends mid-round (``clients.availability``)."""
        gone = set(self.secagg_dropped(round_index))
        if self.offline is not None:
            gone.update(self.offline[round_index - 1])
        return sorted(gone)

    def predicted_exchanges(self, round_index: int) -> list[MessageSizes]:
        cfg = self.config
        sa = cfg.privacy.secagg
        exchanges = round_exchanges(
            self.model.params, self.num_arrays, round_index,
            codec=cfg.compression.codec, topk_fraction=cfg.compression.topk_fraction,
            secagg=sa.mode if sa.enabled else "off", num_neighbours=cfg.secagg_shares() - 1,
            modulus_range=sa.modulus_range,
        )
        crypto = self.costs.secagg if (self.costs is not None and sa.enabled) else None
        if crypto is None:
            return exchanges
        # each SecAgg+ stage's client crypto (keys, shares, masks), as the calibration machine runs it
        return [dataclasses.replace(ex, client_extra_s=ex.client_extra_s + client_stage_s(
                    ex.stage, cfg.secagg_shares(), self.model.params, crypto,
                    sa.reconstruction_threshold))
                if ex.stage in SECAGG_COST_STAGES else ex for ex in exchanges]

    def lost_replies(self) -> list[str]:
        """What a real deployment of this plan would lose before any timing matters: the replies whose largest
        object some clients' uplinks cannot push within Flower's object-push session (:mod:`fedbw.flower_limits`),
        one sentence per stage; empty when every reply arrives."""
        from collections import Counter

        from fedbw.flower_limits import lost_replies

        uplinks = Counter(c.access.up_payload_mbps for c in self.clients)
        return [lost.sentence(len(self.clients)) for lost in lost_replies(self.predicted_exchanges(1), uplinks)]

    def model_stamp(self) -> dict[str, str | None]:
        """What makes this plan's model numbers, for every result built on them: the model's version (a hash
        of its code) and the calibration's fingerprint (None: links only, no Flower costs)."""
        from fedbw.calibration.file import model_stamp

        return model_stamp(self.costs)

    def deployment_clock(self) -> DeploymentClock | None:
        """A fresh clock for laying this plan's rounds out in a Flower deployment (None: links only)."""
        if self.costs is None:
            return None
        return DeploymentClock(self.costs, self.config.deployment.poll_phase, self.config.seed,
                               array_shares=self.model.array_shares)

    def timeline_options(self, round_index: int | None = None) -> dict[str, Any]:
        """What :func:`fedbw.netmodel.round_timeline` needs from the plan besides rows and a clock: the
        shared server link, each client's CPU speed, the per-process set-up of fedbw's real-training apps (a
        deployment starts a ClientApp process per message; simulate's Ray actors do not), when the training
        stage closes (``[round]``), and, for ``round_index``, the SecAgg+ dropouts: who drops, how long the
        server waits for them (its stage timeout, else Flower's heartbeat), their cost in the unmasking."""
        real = self.config.clients.compute == "real"
        # clients as fast as the calibration machine are left out: the clock reads an absent client as 1.0
        speeds = {c.client_id: c.cpu_speed for c in self.clients if c.cpu_speed != 1.0}
        opts: dict[str, Any] = {"server": self.server, "client_cpu": speeds,
                                "app_setup_s": self.costs.app_setup_s if (self.costs is not None and real) else 0.0}
        rnd = self.config.round
        if rnd.closes_early:
            opts["close"] = StageClose(rnd.deadline_s, rnd.enough(self.config.clients.per_round))
        sa = self.config.privacy.secagg
        crypto = self.costs.secagg if (self.costs is not None and sa.enabled) else None
        dropped = self.dropped(round_index) if round_index is not None else []
        if crypto is not None:
            params = self.model.params

            def server_crypto_s(stage: str, clients: int, lost: int = 0) -> float:
                """The server's SecAgg+ work after a stage: summing masked vectors, unmasking (``clients``: the
                stage's; ``lost``: those late at the training stage's close; the unmasking also reconstructs
                what the dropped and the late clients owed)."""
                if stage not in SECAGG_COST_STAGES:
                    return 0.0
                gone = len(dropped) + lost if stage == "unmask" else 0
                n = clients + gone
                return server_stage_s(stage, n, min(sa.shares(n), n), params, crypto, gone, sa.reconstruction_threshold)

            opts["server_extra_s"] = server_crypto_s
        if dropped and self.costs is not None:  # the training stage waits for them (or closes at its deadline)
            # the workflow's stage timeout, and the round's deadline where it comes first (the ServerApp's grid
            # closes the training stage at it: fl/measure.py)
            timeout = min((t for t in (sa.timeout_s if sa.enabled else None, rnd.deadline_s) if t is not None),
                          default=None)
            opts["dropped"] = SecAggDropouts(frozenset(dropped), self.dropout_stage, timeout)
        return opts

    @cached_property
    def profiles_used(self) -> list[str]:
        return sorted({c.profile for c in self.clients})

    # ------------------------------------------------------------------------------ serialization

    def to_json(self) -> dict[str, Any]:
        """Plain data for plan.json: every resolved number, so the apps need no rebuilding."""
        keys: dict[int, str] = {}  # each trace once, by a key of its own (two files may share a name)
        for c in self.clients:
            if (t := c.access.trace) is not None and id(t) not in keys:
                keys[id(t)] = f"{len(keys)}:{t.name}"
        traces = {c.access.trace for c in self.clients if c.access.trace is not None}
        return {
            **PLAN.stamp(), "config": config_to_dict(self.config), "model": self.model.name,
            "num_arrays": self.num_arrays, "rounds": self.rounds, "epsilons": self.epsilons,
            "stop_reason": self.stop_reason, "device": self.device, "samples": self.samples,
            "round_starts_s": self.round_starts_s, "online": self.online, "offline": self.offline,
            "costs": None if self.costs is None else dataclasses.asdict(self.costs),
            "server": [_finite(self.server.up_payload_mbps), _finite(self.server.down_payload_mbps)],
            "clients": [[c.client_id, c.access.profile, c.access.up_mbps, c.access.down_mbps, c.access.rtt_ms,
                         c.access.jitter_ms, c.access.tcp_efficiency, c.num_samples, c.est_compute_s, c.cpu_speed,
                         None if c.access.trace is None else keys[id(c.access.trace)], c.access.trace_offset_s]
                        for c in self.clients],
            # each trace once (clients name theirs by key): its steps per direction and their periods
            "traces": {keys[id(t)]: {d: {"steps": [list(x) for x in t.series(d).steps], "period_s": t.duration(d)}
                                     for d in ("up", "down")} | {"name": t.name, "source": t.source, "format": t.format}
                       for t in traces},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], source: str = "plan") -> Plan:
        """The plan :meth:`to_json` wrote (the config is validated again; nothing is recomputed)."""
        from fedbw.errors import RunError

        PLAN.check(data, source, error=RunError)
        traces = {key: RateTrace(t["name"], t["source"], t["format"],
                                  *(RateSeries(tuple(map(tuple, t[d]["steps"])), t[d]["period_s"]) for d in ("up", "down")))
                  for key, t in data["traces"].items()}
        # clients with equal links share one AccessLink, as in the plan that wrote the file: the clock lays
        # clients on one link object out together (one class), so the file's plan times rounds as it did
        links: dict[tuple[Any, ...], AccessLink] = {}
        clients = []
        for cid, profile, up, down, rtt, jitter, eff, n, compute, speed, trace, offset in data["clients"]:
            key = (profile, up, down, rtt, jitter, eff, trace, offset)
            link = links.get(key)
            if link is None:
                link = links[key] = AccessLink(profile, up, down, rtt, jitter, eff, traces.get(trace), offset)
            clients.append(ClientPlan(int(cid), link, int(n), float(compute), float(speed)))
        up, down = (math.inf if v is None else float(v) for v in data["server"])
        return cls(config=config_from_dict(data["config"], source=source), model=catalog.get_model(data["model"]),
                   clients=clients, num_arrays=int(data["num_arrays"]),
                   samples=[list(map(int, s)) for s in data["samples"]], rounds=int(data["rounds"]),
                   epsilons=data["epsilons"], stop_reason=data["stop_reason"], device=data["device"],
                   costs=None if data["costs"] is None else costs_from_json(data["costs"]), server=ServerLink(up, down),
                   round_starts_s=data["round_starts_s"], online=data["online"],
                   offline=None if data["offline"] is None else [list(map(int, o)) for o in data["offline"]])


@contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for a block that makes hundreds of thousands of small
    objects and no garbage cycles (a plan's clients, a round's rows and records).

    Left running, the collector would scan them all again and again while they are made: more than half
    the time at 100,000 clients per round. Afterwards ``freeze`` + ``unfreeze`` move what the block made
    into the oldest generation unscanned (nothing is lost: a later full collection still looks at it),
    so the first young collection after the block does not scan them all either.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()


def build_plan(cfg: ExperimentConfig, device: str | None = None) -> Plan:
    """Resolve ``cfg`` into a plan; a max_epsilon below one round's ε fails here (ConfigError), before any
    run directory or process exists."""
    with collection_paused():
        return _build_plan(cfg, device)


def _build_plan(cfg: ExperimentConfig, device: str | None) -> Plan:
    model = catalog.get_model(cfg.model.name)
    dev = catalog.get_device_profile(cfg.clients.device_profile)
    samples = samples_per_client(cfg, model)
    steps_samples = (cfg.training.local_steps * cfg.training.batch_size if cfg.training.local_steps
                     else cfg.training.local_epochs * samples)
    compute_s = steps_samples * model.training_flops_per_sample / (dev.effective_tflops * 1e12)
    new = tuple.__new__  # the named tuple from its fields in order, without its argument handling (×200,000)
    clients = [new(ClientPlan, (cid, link, samples, compute_s, dev.cpu_speed))
               for cid, link in enumerate(planned_links(cfg))]
    sampler = cfg.sampler()
    sampled = [sampler.draw(r) for r in range(1, cfg.training.rounds + 1)]
    budget = plan_budget(cfg.privacy.dp, sampler, cfg.training.rounds, lambda r: sampled[r - 1])
    costs = None
    if cfg.framework == "flower-deployment":
        from fedbw.calibration.file import load_costs

        costs = load_costs(cfg.deployment.calibration)
    elif cfg.network.traced:
        raise ConfigError("link-rate traces (network.trace, mix or overrides) need the deployment clock's time: "
                          'set framework = "flower-deployment" (the default), or drop the trace')
    return Plan(cfg, model, clients, num_arrays=model.num_arrays, samples=sampled, rounds=budget.rounds,
                epsilons=budget.epsilons, stop_reason=budget.stop_reason, device=device, costs=costs,
                server=server_link(cfg.server.link))


def _finite(v: float) -> float | None:
    return None if math.isinf(v) else v


def samples_per_client(cfg: ExperimentConfig, model: catalog.ModelSpec) -> int:
    if cfg.data.samples_per_client:
        return cfg.data.samples_per_client
    if resolve_dataset(cfg, model) == "digits":
        return max(1, int(DIGITS_SAMPLES * (1 - cfg.data.test_fraction)) // cfg.clients.total)
    return SYNTHETIC_SAMPLES_PER_CLIENT


def resolve_dataset(cfg: ExperimentConfig, model: catalog.ModelSpec) -> str:
    return model.dataset if cfg.data.dataset == "auto" else cfg.data.dataset
