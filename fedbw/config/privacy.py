"""The privacy sections of an experiment config (SecAgg+, DP) and the checks that involve them.

Every check here stops a config whose privacy figures would not hold (a sum that can wrap, a DP mode
that cannot see what it clips, noise that gives no finite ε) before anything runs.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from fedbw.config.sections import ClientsConfig, CompressionConfig, Section
from fedbw.privacy.sampling import SAMPLERS
from fedbw.privacy.secagg_bounds import wrap_problem

DPMode = Literal["central-server-fixed", "central-server-adaptive", "central-client-fixed",
                 "central-client-adaptive", "local"]


class SecAggConfig(Section):
    enabled: bool = Field(False, description="Flower's SecAgg+ (the server sees only the sum of the updates)")
    mode: Literal["stock", "packed"] = Field(
        "stock", description="`stock`: Flower as is (int64 masked vectors, float64 aggregate); `packed`: uint32 "
                             "masked vectors, float32 aggregate (docs/privacy.md)")
    num_shares: Annotated[int, Field(ge=3)] | Literal["log2", "all"] = Field(
        3, description="neighbours each client shares keys with, itself included (≤ clients.per_round; odd when "
                       "below it); \"log2\": about log2 of the cohort, odd (Bell et al.'s SecAgg+ scaling); "
                       "\"all\": the whole cohort (Flower's SecAgg)")
    reconstruction_threshold: int = Field(2, ge=2, description="shares needed to reconstruct a dropped client's "
                                                               "mask (< num_shares)")
    max_weight: float = Field(1000.0, ge=1, description="client weights (num_examples) are clipped to this")
    clipping_range: float = Field(8.0, gt=0, description="update values are clipped to ±this before they are "
                                                         "quantized")
    quantization_range: int = Field(2**22, gt=0, description="values quantize to [0, T]; clients.per_round × T "
                                                             "must stay below modulus_range (else the masked sum "
                                                             "could wrap)")
    modulus_range: int = Field(2**32, gt=0, description="a power of two, at most 2**32 (Flower's limit)")
    timeout_s: float | None = Field(None, gt=0, description="seconds a SecAgg+ stage waits for replies; unset: "
                                                            "Flower's default (wait for every client)")
    dropout: float = Field(0.0, ge=0.0, lt=1.0, description="estimate: the share of each round's cohort that drops "
                                                            "after the share exchange (silent from the masked "
                                                            "vectors on); emulate drops real clients with "
                                                            "[faults] drops")

    def shares(self, cohort: int) -> int:
        """The number of shares in a round of ``cohort`` clients: ``num_shares``, or its rule resolved."""
        if self.num_shares == "all":
            return cohort
        if self.num_shares == "log2":
            return log2_shares(cohort)
        return self.num_shares

    @model_validator(mode="after")
    def _consistent(self) -> "SecAggConfig":
        if isinstance(self.num_shares, int) and self.reconstruction_threshold >= self.num_shares:
            raise ValueError(
                f"reconstruction_threshold ({self.reconstruction_threshold}) must be less than num_shares "
                f"({self.num_shares}); lower the threshold or raise num_shares")
        if self.modulus_range & (self.modulus_range - 1):
            raise ValueError(f"modulus_range must be a power of two, got {self.modulus_range}")
        if self.modulus_range <= self.quantization_range:
            raise ValueError("modulus_range must be greater than quantization_range")
        return self


class DPConfig(Section):
    enabled: bool = Field(False, description="differential privacy (docs/privacy.md)")
    mode: DPMode = Field("central-server-fixed", description="central DP, the server or the clients clipping, "
                                                             "with a fixed or adaptive clipping norm; or local DP "
                                                             "(each client noises its own update)")
    noise_multiplier: float = Field(1.0, ge=0, description="central DP: the Gaussian noise's std in units of the "
                                                           "clipping norm")
    clipping_norm: float = Field(1.0, gt=0, description="central DP: L2 norm updates are clipped to (the initial "
                                                        "norm with adaptive clipping)")
    target_delta: float = Field(1e-5, gt=0, lt=1, description="central DP: the δ ε is stated at")
    max_epsilon: float | None = Field(None, gt=0, description="stop the run before ε would exceed this")
    local_epsilon: float = Field(1.0, gt=0, description="per-release ε of LocalDpMod (mode = local)")
    local_delta: float = Field(1e-6, gt=0, lt=1, description="per-release δ of LocalDpMod (mode = local)")
    local_accounting: Literal["rdp", "basic", "advanced"] = Field(
        "rdp", description="how local-DP releases compose into ε: RDP of LocalDpMod's "
                                                 "Gaussian (any local_epsilon), basic or advanced (only with "
                                                 "local_epsilon < 1)")
    target_clipped_quantile: float = Field(0.5, ge=0, le=1, description="adaptive clipping: target quantile")
    clip_norm_lr: float = Field(0.2, gt=0, description="adaptive clipping: learning rate of the clipping norm")


class PrivacyConfig(Section):
    secagg: SecAggConfig = Field(default_factory=SecAggConfig, description="secure aggregation (SecAgg+)")
    dp: DPConfig = Field(default_factory=DPConfig, description="differential privacy and its ε accounting")
    randomness: Literal["seed", "os"] = Field(
        "seed", description="seed: sampling, DP noise and SecAgg+ rounding derived from the seed (reproducible, "
                            "not secret: a simulation); os: drawn from OS entropy (a deployment; not reproducible)")


def log2_shares(cohort: int) -> int:
    """About log2(cohort) shares, odd (Flower's ring of neighbours), at least 3 and at most the cohort."""
    k = max(3, round(math.log2(max(cohort, 1))))
    k += 1 - k % 2
    return min(k, cohort if cohort % 2 else cohort - 1)


def check_privacy(privacy: PrivacyConfig, c: ClientsConfig, compression: CompressionConfig,
                  sampled: int | None = None) -> None:
    """Cross-section checks of privacy.secagg and privacy.dp; ValueError says which keys to change. ``sampled``:
    the clients a round samples (more than clients.per_round with round.over_select), SecAgg+'s ring."""
    sa = privacy.secagg
    if sa.enabled:
        n = sampled or c.per_round
        cohort = (f"clients.per_round ({c.per_round})" if n == c.per_round
                  else f"the {n} clients a round samples (clients.per_round × round.over_select)")
        shares = sa.shares(n)
        if shares > n:
            raise ValueError(f"privacy.secagg.num_shares ({sa.num_shares}) cannot exceed {cohort}")
        if sa.reconstruction_threshold >= shares:
            raise ValueError(f"privacy.secagg.reconstruction_threshold ({sa.reconstruction_threshold}) must be less "
                             f"than the {shares} shares num_shares = {sa.num_shares!r} gives at {cohort}; lower the "
                             f"threshold")
        if compression.codec != "none":
            raise ValueError("compression codecs do not compose with SecAgg+: masked values are uniform "
                             "integers; set compression.codec = \"none\" or disable privacy.secagg")
        if shares < n and shares % 2 == 0:
            raise ValueError(f"privacy.secagg.num_shares ({shares}) must be odd when below {cohort}: Flower's SecAgg+ "
                             f"builds a symmetric ring of neighbours and fails on an even count; use {shares - 1} or "
                             f"{shares + 1}")
        if SAMPLERS[c.sampling].cohort_varies:
            raise ValueError("SecAgg+ needs a cohort of at least num_shares clients in every round, and a "
                             "Poisson cohort can have any size (0 included); set clients.sampling = \"fixed\" "
                             "with SecAgg+, or disable privacy.secagg")
        problem = wrap_problem(c.per_round, sa.quantization_range, sa.modulus_range, "clients.per_round")
        if problem:
            raise ValueError(problem)
    dp = privacy.dp
    if dp.enabled and sa.enabled and dp.mode in ("central-server-fixed", "central-server-adaptive"):
        raise ValueError("server-side DP clips individual updates, which SecAgg+ hides from the server; "
                         "use privacy.dp.mode = \"central-client-fixed\" (or -adaptive, or local) with SecAgg+")
    if dp.enabled and compression.codec == "topk":
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
