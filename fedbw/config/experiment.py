"""The whole experiment config and the checks that need more than one section.

Every mistake a person can make across sections ends here as one error that names the keys and says
what to change; nothing downstream re-validates.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fedbw.config.deployment import DeploymentConfig, Framework, ServerConfig
from fedbw.config.privacy import PrivacyConfig, check_privacy
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
    TrainingConfig,
    Section,
)


class ExperimentConfig(Section):
    name: str = "experiment"
    engine: Engine = "simulate"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    seed: int = Field(0, ge=0, description="seeds link assignment, client sampling, data partitioning, model init")
    output_dir: str = "runs"
    framework: Framework = "flower-deployment"
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    clients: ClientsConfig = Field(default_factory=ClientsConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    compression: CompressionConfig = Field(default_factory=CompressionConfig)
    datacenter: DataCenterConfig = Field(default_factory=DataCenterConfig)
    faults: FaultsConfig = Field(default_factory=FaultsConfig)
    emulate: EmulateConfig = Field(default_factory=EmulateConfig)
    deployment: DeploymentConfig = Field(default_factory=DeploymentConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)

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
        check_privacy(self.privacy, c, self.compression)
        return self
