"""The sections of an experiment config: one pydantic model each, defaults = the quickstart.

Field descriptions are the documentation of every key (docs/config.md lists them).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Engine = Literal["estimate", "simulate", "emulate"]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(Section):
    name: str = Field("small-cnn", description="catalog model (`fedbw models`) or params=N (estimate only)")


class DataConfig(Section):
    dataset: Literal["auto", "digits", "synthetic"] = "auto"
    partition: Literal["iid", "dirichlet"] = "iid"
    dirichlet_alpha: float = Field(0.5, gt=0)
    samples_per_client: int | None = Field(None, ge=1, description="default: digits split evenly; synthetic 64")
    test_fraction: float = Field(0.2, gt=0, lt=1)


class ClientsConfig(Section):
    total: int = Field(10, ge=1)
    per_round: int = Field(5, ge=1)
    sampling: Literal["fixed", "poisson"] = Field(
        "fixed", description="fixed: per_round clients drawn without replacement (ε under replace-one); "
                             "poisson: each client independently with probability per_round / total (ε under "
                             "add/remove; rounds may be empty; not with SecAgg+). docs/privacy.md")
    compute: Literal["real", "synthetic"] = "real"
    device_profile: str = "laptop-cpu"


class TrainingConfig(Section):
    rounds: int = Field(3, ge=1)
    local_epochs: int = Field(1, ge=1)
    local_steps: int | None = Field(None, ge=1, description="if set, overrides local_epochs")
    batch_size: int = Field(32, ge=1)
    learning_rate: float = Field(0.05, gt=0)


class LinkShare(Section):
    profile: str
    share: float = Field(1.0, gt=0)


class LinkOverride(Section):
    client: int = Field(ge=0)
    profile: str | None = None
    up_mbps: float | None = Field(None, gt=0)
    down_mbps: float | None = Field(None, gt=0)
    rtt_ms: float | None = Field(None, ge=0)
    jitter_ms: float | None = Field(None, ge=0)


class NetworkConfig(Section):
    profile: str | None = Field(None, description="shorthand for mix = [{profile = ..., share = 1}]")
    mix: list[LinkShare] = Field(default_factory=list)
    overrides: list[LinkOverride] = Field(default_factory=list)

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
        return data


class CompressionConfig(Section):
    codec: Literal["none", "fp16", "int8", "topk"] = "none"
    topk_fraction: float = Field(0.01, gt=0, le=1)
    error_feedback: bool = True


class DataCenterConfig(Section):
    fabrics: list[str] = Field(default_factory=lambda: ["nvlink4", "ib-ndr400", "roce-100g", "eth-10g"])
    ranks: int = Field(8, ge=2)
    grad_bytes_per_value: Literal[1, 2, 4, 8] = Field(4, description="AllReduce dtype: 4 fp32, 2 fp16/bf16")


class DropFault(Section):
    """emulate: kill this client's SuperNode as it receives ``stage`` of ``round`` (it never replies)."""

    client: int = Field(ge=0)
    round: int = Field(1, ge=1)
    stage: Literal["fit", "setup", "share_keys", "collect_masked_vectors", "unmask"] = "fit"


class LinkFlap(Section):
    """emulate: this client's link carries nothing for ``duration_s`` from ``at_s`` after the shaper starts."""

    client: int = Field(ge=0)
    at_s: float = Field(ge=0)
    duration_s: float = Field(gt=0)
    direction: Literal["both", "up", "down"] = "both"


class Straggler(Section):
    """emulate: this client's link runs at ``link_factor`` × its rates (a congested or distant client)."""

    client: int = Field(ge=0)
    link_factor: float = Field(gt=0, le=1)


class FaultsConfig(Section):
    """Faults injected by the emulate engine (estimate and simulate ignore them)."""

    drops: list[DropFault] = Field(default_factory=list)
    flaps: list[LinkFlap] = Field(default_factory=list)
    stragglers: list[Straggler] = Field(default_factory=list)


class EmulateConfig(Section):
    timeout_s: float = Field(1800.0, gt=0, description="stop the Flower run if it has not finished by then "
                                                       "(emulated seconds)")
    keep_logs: bool = Field(True, description="copy SuperLink/SuperNode/shaper logs into the run directory")
    dilation: float | Literal["auto"] = Field(
        1.0, description='time dilation K >= 1: every emulated second lasts K real ones, so the host\'s CPU '
                         'work costs 1/K of its share (docs/emulate.md); "auto": K from clients and cores')
    cap_cpu: bool = Field(True, description="under dilation, cap each device's processes to cpu_speed/K of a "
                                            "core (cgroups; root or a delegated cgroup)")

    @model_validator(mode="after")
    def _dilation(self) -> EmulateConfig:
        k = self.dilation
        if k != "auto" and not (isinstance(k, (int, float)) and 1.0 <= float(k) <= 60.0):
            raise ValueError(f'emulate.dilation must be a number from 1 to 60 or "auto", got {k!r}')
        return self
