"""The whole experiment config and the checks that need more than one section.

Every mistake a person can make across sections ends here as one error that names the keys and says
what to change; nothing downstream re-validates.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fedbw.config.deployment import DeploymentConfig, Framework, ServerConfig
from fedbw.config.privacy import PrivacyConfig, check_privacy
from fedbw.privacy.sampling import Sampler, make_sampler
from fedbw.config.sections import (
    ClientsConfig,
    CompressionConfig,
    DataCenterConfig,
    DataConfig,
    EmulateConfig,
    Engine,
    FaultsConfig,
    ModelConfig,
    NetworkConfig,
    RoundConfig,
    Section,
    SimulateConfig,
    TrainingConfig,
)


class ExperimentConfig(Section):
    name: str = Field("experiment", description="run name; run directories are "
                                                "`<output_dir>/<name>-<engine>-<UTC time>`")
    engine: Engine = Field("simulate", description="`estimate` (analytic, instant), `simulate` (Flower's "
                                                   "Simulation Engine, virtual network clock), `emulate` (Flower's "
                                                   "Deployment Engine through the link shaper, wall clock or "
                                                   "dilated)")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="what clients train on: `auto` uses CUDA "
                                                                       "when present, else the CPU")
    seed: int = Field(0, ge=0, description="seeds link assignment, client sampling, data partitioning, model init")
    output_dir: str = Field("runs", description="where run directories go")
    framework: Framework = Field(
        "flower-deployment", description="`flower-deployment`: estimate and simulate add Flower's own costs to "
                                         "every round (polls, a ClientApp process per message, serialisation, "
                                         "requests per object, aggregation; docs/methodology.md); `none`: the "
                                         "links and compute alone")
    model: ModelConfig = Field(default_factory=ModelConfig, description="the model every client trains")
    data: DataConfig = Field(default_factory=DataConfig, description="the data set and how clients share it")
    clients: ClientsConfig = Field(default_factory=ClientsConfig, description="how many clients, how they are "
                                                                             "sampled, what they compute on")
    training: TrainingConfig = Field(default_factory=TrainingConfig, description="rounds and local training")
    network: NetworkConfig = Field(default_factory=NetworkConfig, description="each client's access link")
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig, description="SecAgg+, differential privacy "
                                                                             "and where randomness comes from")
    compression: CompressionConfig = Field(default_factory=CompressionConfig, description="uplink update codecs")
    datacenter: DataCenterConfig = Field(default_factory=DataCenterConfig, description="the data-center side of "
                                                                                       "the comparison: AllReduce "
                                                                                       "of the same model")
    round: RoundConfig = Field(default_factory=RoundConfig, description="when a round's training stage closes: "
                                                                      "deadline, over-selection, minimum replies "
                                                                      "(every engine; docs/population.md)")
    faults: FaultsConfig = Field(default_factory=FaultsConfig, description="faults the emulate engine injects "
                                                                          "(estimate and simulate ignore them)")
    emulate: EmulateConfig = Field(default_factory=EmulateConfig, description="the emulate engine "
                                                                             "(docs/emulate.md)")
    simulate: SimulateConfig = Field(default_factory=SimulateConfig, description="where the simulate engine's "
                                                                                "Ray runs: private, or an "
                                                                                "existing cluster")
    deployment: DeploymentConfig = Field(default_factory=DeploymentConfig, description="Flower's deployment "
                                                                                      "costs: their calibration "
                                                                                      "and unknown phases")
    server: ServerConfig = Field(default_factory=ServerConfig, description="the federation's server")

    def sampler(self) -> Sampler:
        """The sampler ``clients.sampling`` names: it draws each round's cohort and tells the accountant how
        to account for it (the plan builds it once; fedbw.privacy.sampling)."""
        c = self.clients
        r = self.round
        return make_sampler(c.sampling, c.total, self.sampled_per_round(), self.seed, self.privacy.randomness,
                            on_line_only=c.availability is not None,
                            first_replies=(c.per_round, r.min_replies) if r.closes_early else None)

    def sampled_per_round(self) -> int:
        """Clients a round samples: clients.per_round, or more with round.over_select."""
        return self.round.cohort(self.clients.per_round, self.clients.total)

    def secagg_shares(self) -> int:
        """SecAgg+'s shares in a round: privacy.secagg.num_shares resolved on the cohort the round samples (with
        over-selection "all" and "log2" count the clients sampled, whose ring Flower builds)."""
        return self.privacy.secagg.shares(self.sampled_per_round())

    @model_validator(mode="after")
    def _cross_checks(self) -> "ExperimentConfig":
        c = self.clients
        if c.per_round > c.total:
            raise ValueError(f"clients.per_round ({c.per_round}) cannot exceed clients.total ({c.total})")
        for o in self.network.overrides:
            if o.client >= c.total:
                raise ValueError(f"network.overrides names client {o.client}, but clients are 0..{c.total - 1}")
        f = self.faults
        for kind, items in (("drops", f.drops), ("flaps", f.flaps), ("stragglers", f.stragglers)):
            for item in items:
                if item.client >= c.total:
                    raise ValueError(f"faults.{kind} names client {item.client}, but clients are 0..{c.total - 1}")
        for d in f.drops:
            secagg_stage = d.stage != "fit"
            if secagg_stage != self.privacy.secagg.enabled:
                raise ValueError(f"faults.drops: stage {d.stage!r} does not exist in this run; use "
                                 + ('"setup", "share_keys", "collect_masked_vectors" or "unmask" (SecAgg+ is on)'
                                    if self.privacy.secagg.enabled else '"fit" (SecAgg+ is off)'))
            if d.round > self.training.rounds:
                raise ValueError(f"faults.drops: round {d.round} is after the last round ({self.training.rounds})")
        check_privacy(self.privacy, c, self.compression, self.sampled_per_round())
        self._check_round()
        self._check_availability()
        sa = self.privacy.secagg
        if sa.dropout > 0:
            if not sa.enabled:
                raise ValueError("privacy.secagg.dropout needs SecAgg+ (privacy.secagg.enabled = true)")
            if self.engine != "estimate":
                raise ValueError(f"privacy.secagg.dropout is modelled by the estimate engine only; {self.engine} "
                                 "runs real clients: under emulate drop them with [faults] drops (docs/emulate.md)")
            if self.framework != "flower-deployment":
                raise ValueError('privacy.secagg.dropout needs Flower\'s deployment clock (framework = '
                                 '"flower-deployment"): what a dropout costs is how long the server waits for it')
        return self

    def _check_availability(self) -> None:
        """``clients.availability``: what the plan can decide for every engine so far (issue 32)."""
        if self.clients.availability is None:
            return
        if self.sampler().cohort_varies:  # the sampler is the one place clients.sampling's name is read
            raise ValueError('clients.availability samples a fixed-size cohort from the clients on line; use '
                             'clients.sampling = "fixed"')
        if self.framework != "flower-deployment":
            raise ValueError('clients.availability needs Flower\'s deployment clock (framework = '
                             '"flower-deployment"): when the next round starts, and what a client that goes off '
                             'line costs, are Flower\'s times')
        if self.faults.drops:
            raise ValueError("clients.availability decides who drops; leave [faults] drops out")

    def _check_round(self) -> None:
        """``[round]``: a deadline or over-selection in every engine; under SecAgg+ a late client is one that
        dropped after the share exchange (Flower's unmask path). With DP, ε is accounted for the cohort each
        round aggregated (fedbw.privacy.sampling.FirstRepliesSampler)."""
        r, c = self.round, self.clients
        if r.min_replies > c.per_round:
            raise ValueError(f"round.min_replies ({r.min_replies}) cannot exceed clients.per_round ({c.per_round})")
        if not r.closes_early:
            return
        dp, varies = self.privacy.dp, self.sampler().cohort_varies
        if dp.enabled and dp.mode != "local" and varies:
            raise ValueError(f"round.deadline_s with central DP needs clients.sampling = \"fixed\": a deadline keeps "
                             f"the replies that came first, which is not the {c.sampling} sample ε's amplification "
                             f"is accounted for")
        if r.over_select > 1.0 and varies:
            raise ValueError(f"round.over_select needs a fixed-size cohort; clients.sampling = {c.sampling!r} draws "
                             f"a cohort that varies from round to round")
