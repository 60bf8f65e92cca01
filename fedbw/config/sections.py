"""The sections of an experiment config: one pydantic model each, defaults = the quickstart.

Field descriptions are the documentation of every key (docs/config.md lists them).
"""

from __future__ import annotations

import math

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

if TYPE_CHECKING:
    from fedbw.traces.availability import Availability

Engine = Literal["estimate", "simulate", "emulate"]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(Section):
    name: str = Field("small-cnn", description="catalog model (`fedbw models`) or `params=N` (estimate only)")


class DataConfig(Section):
    dataset: Literal["auto", "digits", "synthetic"] = Field(
        "auto", description="`digits` (scikit-learn's 8×8 images, ship with it), `synthetic` (samples shaped "
                            "for the model, generated locally) or `auto` (the model's default); no downloads")
    partition: Literal["iid", "dirichlet"] = Field("iid", description="`iid` or `dirichlet` (label skew)")
    dirichlet_alpha: float = Field(0.5, gt=0, description="Dirichlet concentration (smaller = more skew)")
    samples_per_client: int | None = Field(None, ge=1, description="training samples per client; unset: digits "
                                                                   "split evenly, synthetic 64")
    test_fraction: float = Field(0.2, gt=0, lt=1, description="held-out share of digits for the server's "
                                                              "evaluation")


class AvailabilityConfig(Section):
    """When each client is on line (issue 32): a round samples only clients on line at its start, and a
    sampled client whose on-line time ends before its training reply drops out of the round (Flower waits
    for its heartbeat to lapse, unless a deadline closes the stage first). Who is on line when is decided
    once, in the plan, on the model's clock, so every engine runs the same cohorts (docs/population.md)."""

    file: str | None = Field(None, description="a CSV of on-line intervals, `client,start_s,end_s` per line "
                                               "(`fedbw trace availability --save` writes one); a client "
                                               "without a line is never on line")
    generate: Literal["two-state", "diurnal"] | None = Field(
        None, description="without a file: two-state (each client on and off in turn, exponential times of the "
                          "means below) or diurnal (the same, coming back on line most around peak_hour)")
    mean_on_s: float = Field(1800.0, gt=0, description="generate: mean time on line, seconds")
    mean_off_s: float = Field(5400.0, gt=0, description="generate: mean time off line, seconds")
    amplitude: float = Field(0.8, ge=0, lt=1, description="diurnal: how much the day moves the rate of coming "
                                                          "back on line (0: not at all)")
    peak_hour: float = Field(2.0, ge=0, lt=24, description="diurnal: the hour after the trace's start when "
                                                           "most clients are on line")
    horizon_h: float = Field(48.0, gt=0, le=24 * 366, description="generate: hours of availability drawn; a "
                                                                 "round that would start after it is an error")
    start_s: float = Field(0.0, ge=0, description="where on the availability trace the first round starts")
    seed: int | None = Field(None, description="generate: its seed (unset: the experiment's seed)")

    @model_validator(mode="after")
    def _one_source(self) -> AvailabilityConfig:
        if (self.file is None) == (self.generate is None):
            raise ValueError("clients.availability: set file (a CSV of on-line intervals) or generate "
                             "(two-state or diurnal), one of them")
        return self

    def load(self, clients: int, seed: int) -> Availability:
        """The :class:`~fedbw.traces.availability.Availability` this section names (ConfigError for a bad file)."""
        from fedbw.traces.availability import diurnal, read_availability, two_state

        if self.file is not None:
            return read_availability(self.file)
        own = self.seed if self.seed is not None else seed
        horizon = 3600.0 * self.horizon_h
        if self.generate == "diurnal":
            return diurnal(clients, self.mean_on_s, self.mean_off_s, horizon, self.amplitude, self.peak_hour, own)
        return two_state(clients, self.mean_on_s, self.mean_off_s, horizon, own)


class ClientsConfig(Section):
    total: int = Field(10, ge=1, description="clients in the federation")
    per_round: int = Field(5, ge=1, description="clients sampled per round (≤ total); the expected cohort under "
                                                "Poisson sampling")
    sampling: Literal["fixed", "poisson"] = Field(
        "fixed", description="fixed: per_round clients drawn without replacement (ε under replace-one); "
                             "poisson: each client independently with probability per_round / total (ε under "
                             "add/remove; rounds may be empty; not with SecAgg+). docs/privacy.md")
    compute: Literal["real", "synthetic"] = Field(
        "real", description="`real` trains; `synthetic` replies with a model-shaped update after a compute time "
                            "drawn from the device profile (scale studies)")
    device_profile: str = Field("laptop-cpu", description="compute profile for estimates and synthetic compute "
                                                          "(`fedbw profiles`)")
    availability: AvailabilityConfig | None = Field(
        None, description="when each client is on line: `{file = \"on.csv\"}` or `{generate = \"two-state\", "
                          "mean_on_s = 1800, mean_off_s = 5400}` (clients.availability.*; unset: always on line)")


class TrainingConfig(Section):
    rounds: int = Field(3, ge=1, description="federated rounds")
    local_epochs: int = Field(1, ge=1, description="local epochs per round")
    local_steps: int | None = Field(None, ge=1, description="if set, local mini-batch steps per round (overrides "
                                                           "local_epochs)")
    batch_size: int = Field(32, ge=1, description="local mini-batch size")
    learning_rate: float = Field(0.05, gt=0, description="local SGD learning rate")


class RoundConfig(Section):
    """When a round's training stage closes: production federated learning over-selects and closes a round at
    a reporting deadline or once enough clients replied, instead of waiting for its slowest client (Bonawitz
    et al. 2019; fedbw.netmodel.close). A late client still downloads, trains and uploads; its update is not
    used. Under SecAgg+ the training stage is the masked vectors' (after the share exchange): a late client
    is one that dropped, and the server's unmask stage reconstructs its masks (the round completes only if
    enough of every client's share holders replied in time: privacy.secagg.num_shares and
    reconstruction_threshold)."""

    deadline_s: float | None = Field(None, gt=0, description="seconds after the server pushed the training "
                                                             "messages: it stops pulling replies at its first "
                                                             "poll at or after them (Flower's reply timeout); "
                                                             "unset: no deadline")
    over_select: float = Field(1.0, ge=1.0, le=4.0, description="sample this many times clients.per_round "
                                                                "(rounded up, at most clients.total) and close "
                                                                "the stage once clients.per_round replies are in "
                                                                "(1.3: FedScale's default over-commitment)")
    min_replies: int = Field(1, ge=1, description="a round with fewer replies by its close is abandoned: the "
                                                  "server keeps the previous model (≤ clients.per_round); with DP "
                                                  "and a deadline or over-selection, privacy.dp.max_epsilon "
                                                  "budgets each round at this many replies")

    @property
    def closes_early(self) -> bool:
        """Whether anything but the last reply can close the stage."""
        return self.deadline_s is not None or self.over_select > 1.0

    def cohort(self, per_round: int, total: int) -> int:
        """Clients sampled per round: per_round × over_select, rounded up, at most the population."""
        return min(total, math.ceil(per_round * self.over_select - 1e-9))

    def enough(self, per_round: int) -> int | None:
        """Replies that close the stage before the deadline (None: all of the sampled)."""
        return per_round if self.over_select > 1.0 else None


class LinkShare(Section):
    profile: str = Field(description="link profile (`fedbw profiles`)")
    share: float = Field(1.0, gt=0, description="relative share of the clients on this profile")
    trace: str | None = Field(None, description="a link-rate trace these clients' links replay instead of the "
                                                "profile's rates (a shipped trace's name, or a CSV or mahimahi "
                                                "file; docs/traces.md); the profile keeps RTT and jitter")


class LinkOverride(Section):
    client: int = Field(ge=0, description="client id, 0 … clients.total − 1")
    profile: str | None = Field(None, description="this client's link profile instead of its share of the mix")
    up_mbps: float | None = Field(None, gt=0, description="uplink line rate, Mbps; replaces the profile's (the "
                                                          "profile's name gets a `*` in the records)")
    down_mbps: float | None = Field(None, gt=0, description="downlink line rate, Mbps; replaces the profile's")
    rtt_ms: float | None = Field(None, ge=0, description="round-trip time, ms; replaces the profile's")
    jitter_ms: float | None = Field(None, ge=0, description="jitter, ms; replaces the profile's")
    trace: str | None = Field(None, description="a link-rate trace this client's link replays (name or file); "
                                                "not with up_mbps or down_mbps")

    @model_validator(mode="after")
    def _trace_or_rates(self) -> LinkOverride:
        if self.trace is not None and (self.up_mbps is not None or self.down_mbps is not None):
            raise ValueError(f"client {self.client}: a trace gives the link's rates; set trace or up_mbps/down_mbps, "
                             "not both")
        return self


class NetworkConfig(Section):
    profile: str | None = Field(None, description="shorthand: every client on one profile (mix = [{profile = "
                                                   "..., share = 1}]); not with mix")
    mix: list[LinkShare] = Field(default_factory=list, description="profiles with shares; clients are split by "
                                                                   "largest remainder and shuffled by seed; neither "
                                                                   "profile nor mix: home-30")
    overrides: list[LinkOverride] = Field(default_factory=list, description="per client: `{client = 3, profile = "
                                                                            "\"mobile-4g\"}` or `{client = 3, "
                                                                            "up_mbps = 5, rtt_ms = 80}`")
    trace: str | None = Field(None, description="shorthand: every mix entry without a trace of its own replays this "
                                                "link-rate trace (name or file; docs/traces.md)")
    trace_phase: Literal["staggered", "aligned"] = Field(
        "staggered", description="where in its trace each client starts: staggered (a seeded point of the trace per "
                                 "client, so clients on one trace do not step together) or aligned (every client at "
                                 "the trace's start); t = 0 is the first round's start in every engine")

    @model_validator(mode="before")
    @classmethod
    def _one_source(cls, data: Any) -> Any:
        """``profile = "x"`` is shorthand for a one-entry mix; no mix at all means home-30."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        profile, mix = data.get("profile"), data.get("mix")
        if profile is not None and mix:
            raise ValueError("set either network.profile or network.mix, not both")
        if profile is not None:
            data["mix"], data["profile"] = [{"profile": profile, "share": 1.0}], None
        elif not mix:
            data["mix"] = [{"profile": "home-30", "share": 1.0}]
        if (trace := data.get("trace")) is not None:
            data["mix"] = [{**m, "trace": m.get("trace") or trace} if isinstance(m, dict) else m for m in data["mix"]]
        return data

    @property
    def traced(self) -> bool:
        """Whether any client's link replays a trace."""
        return any(m.trace for m in self.mix) or any(o.trace for o in self.overrides)


class CompressionConfig(Section):
    codec: Literal["none", "fp16", "int8", "topk"] = Field(
        "none", description="how clients encode their update on the uplink (docs/privacy.md): float16, int8 with a "
                            "scale per tensor, or the top-k largest values with their indices")
    topk_fraction: float = Field(0.01, gt=0, le=1, description="share of values top-k keeps")
    error_feedback: bool = Field(True, description="top-k keeps what it did not send on the client and adds it "
                                                   "to the next round's update")


class DataCenterConfig(Section):
    fabrics: list[str] = Field(default_factory=lambda: ["nvlink4", "ib-ndr400", "roce-100g", "eth-10g"],
                               description="fabrics in the comparison (`fedbw profiles`)")
    ranks: int = Field(8, ge=2, description="AllReduce ranks (GPUs)")
    grad_bytes_per_value: Literal[1, 2, 4, 8] = Field(4, description="AllReduce dtype: 4 fp32, 2 fp16/bf16")


class DropFault(Section):
    """emulate: kill this client's SuperNode as it receives ``stage`` of ``round`` (it never replies)."""

    client: int = Field(ge=0, description="client id whose SuperNode is killed")
    round: int = Field(1, ge=1, description="round it is killed in")
    stage: Literal["fit", "setup", "share_keys", "collect_masked_vectors", "unmask"] = Field(
        "fit", description="message it is killed on: `fit` without SecAgg+; `setup`, `share_keys`, "
                           "`collect_masked_vectors` or `unmask` with it")


class LinkFlap(Section):
    """This client's link carries nothing for ``duration_s`` from ``at_s`` after the first round's start: a
    trace of its link (fedbw.links.with_flaps), so every engine sees it."""

    client: int = Field(ge=0, description="client id whose link goes down")
    at_s: float = Field(ge=0, description="seconds after the first round's start")
    duration_s: float = Field(gt=0, description="seconds the link carries nothing (rate 0)")
    direction: Literal["both", "up", "down"] = Field("both", description="which direction goes down")


class Straggler(Section):
    """This client's link runs at ``link_factor`` × its rates (a congested or distant client), in every
    engine (fedbw.links.with_straggler)."""

    client: int = Field(ge=0, description="client id whose link is slowed")
    link_factor: float = Field(gt=0, le=1, description="multiplies the link's rates (0.25: a quarter of them)")


class FaultsConfig(Section):
    """Faults: stragglers and flaps are the plan's links, seen by every engine; drops are emulate's (the
    model's dropouts come from clients.availability and privacy.secagg.dropout)."""

    drops: list[DropFault] = Field(default_factory=list, description="emulate: `{client = 2, round = 1, stage = "
                                                                    "\"fit\"}` kills that client's SuperNode as it "
                                                                    "receives the stage (it never replies)")
    flaps: list[LinkFlap] = Field(default_factory=list, description="`{client = 1, at_s = 20, duration_s = 5}` "
                                                                    "takes the link down for duration_s from at_s "
                                                                    "after the first round's start (every engine)")
    stragglers: list[Straggler] = Field(default_factory=list, description="`{client = 0, link_factor = 0.25}` runs "
                                                                          "that client's link at a quarter of its "
                                                                          "rates (every engine)")


class EmulateConfig(Section):
    timeout_s: float = Field(1800.0, gt=0, description="stop the Flower run if it has not finished by then "
                                                       "(emulated seconds; every process is stopped)")
    keep_logs: bool = Field(True, description="copy SuperLink/SuperNode/shaper logs into the run directory")
    dilation: float | Literal["auto"] = Field(
        1.0, description='time dilation K from 1 to 60: every emulated second lasts K real ones, so the host\'s '
                         'CPU work costs 1/K of its share (docs/emulate.md); "auto": K = ⌈(clients + 2) / '
                         '(cores − 0.5)⌉')
    cap_cpu: bool = Field(True, description="under dilation, cap each device's processes to cpu_speed/K of a "
                                            "core and the server's to 2/K (cgroups; root or a delegated cgroup)")
    cap_period_ms: int = Field(100, ge=10, le=1000, description="the caps' accounting period: a capped device runs "
                                                                "its share of each period, then waits out the rest "
                                                                "(100: the kernel's; docs/fidelity.md compares 400)")
    hosts: Literal["loopback", "netns"] = Field(
        "loopback", description='"loopback": every process on this host\'s 127.0.0.1; "netns": the SuperLink and '
                                'each SuperNode on a network host of its own (namespaces; root and `ip netns`), '
                                'a shaper per client host, always TLS (docs/multi-host.md)')
    tls: bool = Field(False, description="the loopback SuperLink serves TLS with a certificate from a CA made for "
                                         "the run, checked by every SuperNode (hosts = \"netns\" always runs TLS)")
    supernode_auth: bool = Field(
        False, description="SuperNode authentication: the SuperLink starts with --enable-supernode-auth and only "
                           "SuperNodes whose public key was registered (a key pair each, made for the run) may "
                           "connect; needs TLS (tls = true or hosts = \"netns\")")

    @model_validator(mode="after")
    def _dilation(self) -> EmulateConfig:
        k = self.dilation
        if k != "auto" and not (isinstance(k, (int, float)) and 1.0 <= float(k) <= 60.0):
            raise ValueError(f'emulate.dilation must be a number from 1 to 60 or "auto", got {k!r}')
        if self.supernode_auth and not (self.tls or self.hosts == "netns"):
            raise ValueError('emulate.supernode_auth needs TLS (Flower refuses SuperNode authentication on an '
                             'insecure SuperLink): set emulate.tls = true (`fedbw emulate --tls`), or hosts = "netns" '
                             '(always TLS)')
        return self


def _check_ray_address(value: str | None) -> str | None:
    """``"auto"`` or ``HOST:PORT`` (a Ray cluster's GCS address), else a ValueError saying what to write."""
    if value is None or value == "auto":
        return value
    host, sep, port = value.rpartition(":")
    if value.startswith("ray://"):
        raise ValueError('Ray Client (ray://) is not supported; give the cluster\'s GCS address HOST:PORT '
                         '(`ray start --head` prints it) or "auto"')
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError('must be "auto" or HOST:PORT (e.g. "10.0.0.1:6379")')
    return value


class SimulateConfig(Section):
    """Where Flower's Simulation Engine runs: a private Ray on this machine, or an existing Ray cluster."""

    ray_address: str | None = Field(
        None, description='attach to an existing Ray cluster instead of starting a private one: "auto" (the '
                          'cluster `ray start` started on this node, or $RAY_ADDRESS) or its GCS address '
                          'HOST:PORT; unset: a private Ray on this machine, never a cluster by accident '
                          '(docs/multi-host.md)')
    client_cpus: float = Field(1.0, gt=0, description="Ray CPUs each ClientApp actor asks for; the actor pool "
                                                      "is as many actors as fit on every node")
    client_gpus: float | None = Field(
        None, ge=0, description="Ray GPUs each actor asks for (0.25: four actors share a GPU); unset: "
                                "1 / actors on CUDA for a private Ray, 0 on a cluster")
    client_memory_mb: int | None = Field(
        None, ge=1, description="Ray memory each actor reserves (MiB); unset: none reserved")

    @field_validator("ray_address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        return _check_ray_address(value)
