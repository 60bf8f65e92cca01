"""The whole experiment config and the checks that need more than one section.

Every mistake a person can make across sections ends here as one error that names the keys and says
what to change; nothing downstream re-validates.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

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
    PrivacyConfig,
    TrainingConfig,
    Section,
)


class ExperimentConfig(Section):
    name: str = "experiment"
    engine: Engine = "simulate"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    seed: int = 0
    output_dir: str = "runs"
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
        sa = self.privacy.secagg
        if sa.enabled:
            if sa.num_shares > c.per_round:
                raise ValueError(f"privacy.secagg.num_shares ({sa.num_shares}) cannot exceed clients.per_round "
                                 f"({c.per_round})")
            if self.compression.codec != "none":
                raise ValueError("compression codecs do not compose with SecAgg+: masked values are uniform "
                                 "integers; set compression.codec = \"none\" or disable privacy.secagg")
            if sa.num_shares < c.per_round and sa.num_shares % 2 == 0:
                raise ValueError(f"privacy.secagg.num_shares ({sa.num_shares}) must be odd when below clients.per_round "
                                 f"({c.per_round}): Flower's SecAgg+ builds a symmetric ring of neighbours and fails "
                                 f"on an even count; use {sa.num_shares - 1} or {sa.num_shares + 1}")
            if c.per_round * sa.quantization_range >= sa.modulus_range:
                raise ValueError(f"SecAgg+ would overflow: the sum of clients.per_round ({c.per_round}) quantized "
                                 f"values, each up to privacy.secagg.quantization_range ({sa.quantization_range}), "
                                 f"must stay below privacy.secagg.modulus_range ({sa.modulus_range}); lower "
                                 f"quantization_range or clients.per_round, or raise modulus_range")
        dp = self.privacy.dp
        if dp.enabled and sa.enabled and dp.mode in ("central-server-fixed", "central-server-adaptive"):
            raise ValueError("server-side DP clips individual updates, which SecAgg+ hides from the server; "
                             "use privacy.dp.mode = \"central-client-fixed\" (or -adaptive, or local) with SecAgg+")
        if dp.enabled and self.compression.codec == "topk":
            raise ValueError("top-k sparsification does not compose with DP noise (noise makes updates dense); "
                             "use codec fp16/int8 or disable DP")
        if dp.enabled and dp.mode != "local" and dp.noise_multiplier <= 0:
            raise ValueError("privacy.dp.noise_multiplier must be > 0 with central DP (0 adds no noise, so no finite "
                             "ε); raise it or set privacy.dp.enabled = false")
        if dp.enabled and dp.mode.endswith("-adaptive") and dp.noise_multiplier >= c.per_round / 10:
            raise ValueError(f"privacy.dp.noise_multiplier ({dp.noise_multiplier}) must be below clients.per_round/10 "
                             f"({c.per_round / 10:g}) with adaptive clipping (Flower splits the noise with a clipped-"
                             f"count query of std per_round/20); lower noise_multiplier, raise clients.per_round or "
                             f"use a -fixed mode")
        if dp.enabled and dp.mode == "local" and dp.local_accounting != "rdp" and dp.local_epsilon >= 1:
            raise ValueError(f"privacy.dp.local_accounting = \"{dp.local_accounting}\" composes LocalDpMod's per-release "
                             f"(ε, δ) guarantee, which its Gaussian calibration only keeps for ε < 1 (local_epsilon = "
                             f"{dp.local_epsilon}); use local_accounting = \"rdp\" or local_epsilon < 1")
        return self
