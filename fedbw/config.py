"""Experiment configs: pydantic models, TOML loading, ``--set`` overrides.

Every mistake a person can make in a config ends here as one :class:`ConfigError` that names the
key and says what to change; nothing downstream re-validates. Defaults are the quickstart: a small
CNN on scikit-learn's digits, 10 clients on 30 Mbps home uplinks, three rounds.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fedbw.errors import CatalogError, ConfigError

Engine = Literal["estimate", "simulate", "emulate"]
DPMode = Literal["central-server-fixed", "central-server-adaptive", "central-client-fixed",
                 "central-client-adaptive", "local"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(_Section):
    name: str = Field("small-cnn", description="catalog model (`fedbw models`) or params=N (estimate only)")


class DataConfig(_Section):
    dataset: Literal["auto", "digits", "synthetic"] = "auto"
    partition: Literal["iid", "dirichlet"] = "iid"
    dirichlet_alpha: float = Field(0.5, gt=0)
    samples_per_client: int | None = Field(None, ge=1, description="default: digits split evenly; synthetic 64")
    test_fraction: float = Field(0.2, gt=0, lt=1)


class ClientsConfig(_Section):
    total: int = Field(10, ge=1)
    per_round: int = Field(5, ge=1)
    compute: Literal["real", "synthetic"] = "real"
    device_profile: str = "laptop-cpu"


class TrainingConfig(_Section):
    rounds: int = Field(3, ge=1)
    local_epochs: int = Field(1, ge=1)
    local_steps: int | None = Field(None, ge=1, description="if set, overrides local_epochs")
    batch_size: int = Field(32, ge=1)
    learning_rate: float = Field(0.05, gt=0)


class LinkShare(_Section):
    profile: str
    share: float = Field(1.0, gt=0)


class LinkOverride(_Section):
    client: int = Field(ge=0)
    profile: str | None = None
    up_mbps: float | None = Field(None, gt=0)
    down_mbps: float | None = Field(None, gt=0)
    rtt_ms: float | None = Field(None, ge=0)
    jitter_ms: float | None = Field(None, ge=0)


class NetworkConfig(_Section):
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


class SecAggConfig(_Section):
    enabled: bool = False
    mode: Literal["stock", "packed"] = "stock"
    num_shares: int = Field(3, ge=3, description="neighbours each client shares keys with, itself included")
    reconstruction_threshold: int = Field(2, ge=2)
    max_weight: float = Field(1000.0, gt=0)
    clipping_range: float = Field(8.0, gt=0)
    quantization_range: int = Field(2**22, gt=0)
    modulus_range: int = Field(2**32, gt=0)
    timeout_s: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _consistent(self) -> "SecAggConfig":
        if self.reconstruction_threshold >= self.num_shares:
            raise ValueError(
                f"reconstruction_threshold ({self.reconstruction_threshold}) must be less than num_shares "
                f"({self.num_shares}); lower the threshold or raise num_shares")
        if self.modulus_range & (self.modulus_range - 1):
            raise ValueError(f"modulus_range must be a power of two, got {self.modulus_range}")
        if self.modulus_range <= self.quantization_range:
            raise ValueError("modulus_range must be greater than quantization_range")
        return self


class DPConfig(_Section):
    enabled: bool = False
    mode: DPMode = "central-server-fixed"
    noise_multiplier: float = Field(1.0, ge=0)
    clipping_norm: float = Field(1.0, gt=0)
    target_delta: float = Field(1e-5, gt=0, lt=1)
    max_epsilon: float | None = Field(None, gt=0, description="stop the run before ε would exceed this")
    local_epsilon: float = Field(1.0, gt=0, description="per-release ε of LocalDpMod (mode = local)")
    local_delta: float = Field(1e-6, gt=0, lt=1)
    local_accounting: Literal["rdp", "basic", "advanced"] = Field(
        "rdp", description="how local-DP releases compose: RDP of LocalDpMod's Gaussian, basic or advanced")
    target_clipped_quantile: float = Field(0.5, ge=0, le=1, description="adaptive clipping: target quantile")
    clip_norm_lr: float = Field(0.2, gt=0, description="adaptive clipping: learning rate of the clipping norm")


class PrivacyConfig(_Section):
    secagg: SecAggConfig = Field(default_factory=SecAggConfig)
    dp: DPConfig = Field(default_factory=DPConfig)


class CompressionConfig(_Section):
    codec: Literal["none", "fp16", "int8", "topk"] = "none"
    topk_fraction: float = Field(0.01, gt=0, le=1)
    error_feedback: bool = True


class DataCenterConfig(_Section):
    fabrics: list[str] = Field(default_factory=lambda: ["nvlink4", "ib-ndr400", "roce-100g", "eth-10g"])
    ranks: int = Field(8, ge=2)
    grad_bytes_per_value: Literal[1, 2, 4, 8] = Field(4, description="AllReduce dtype: 4 fp32, 2 fp16/bf16")


class DropFault(_Section):
    """emulate: kill this client's SuperNode as it receives ``stage`` of ``round`` (it never replies)."""

    client: int = Field(ge=0)
    round: int = Field(1, ge=1)
    stage: Literal["fit", "setup", "share_keys", "collect_masked_vectors", "unmask"] = "fit"


class LinkFlap(_Section):
    """emulate: this client's link carries nothing for ``duration_s`` from ``at_s`` after the shaper starts."""

    client: int = Field(ge=0)
    at_s: float = Field(ge=0)
    duration_s: float = Field(gt=0)
    direction: Literal["both", "up", "down"] = "both"


class Straggler(_Section):
    """emulate: this client's link runs at ``link_factor`` × its rates (a congested or distant client)."""

    client: int = Field(ge=0)
    link_factor: float = Field(gt=0, le=1)


class FaultsConfig(_Section):
    """Faults injected by the emulate engine (estimate and simulate ignore them)."""

    drops: list[DropFault] = Field(default_factory=list)
    flaps: list[LinkFlap] = Field(default_factory=list)
    stragglers: list[Straggler] = Field(default_factory=list)


class EmulateConfig(_Section):
    timeout_s: float = Field(1800.0, gt=0, description="stop the Flower run if it has not finished by then")
    keep_logs: bool = Field(True, description="copy SuperLink/SuperNode/shaper logs into the run directory")


class ExperimentConfig(_Section):
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


# ----------------------------------------------------------------------------------------- loading


def load_config(path: str | Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Read, override and validate one experiment config."""
    data = read_toml(path, "config", "ready configs are in experiments/")
    return config_from_dict(data, overrides or [], source=str(path))


def read_toml(path: str | Path, kind: str, where_hint: str) -> dict[str, Any]:
    """Parse a TOML file, or raise one ConfigError saying what to fix (missing, a directory, bad syntax)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{kind} file {str(path)!r} not found; check the path ({where_hint}).")
    if path.is_dir():
        raise ConfigError(f"{str(path)!r} is a directory; pass a .toml {kind} file.")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the syntax at that line.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file; pass a TOML {kind} file.") from None


def config_from_dict(data: dict[str, Any], overrides: list[str] | None = None,
                     source: str = "config") -> ExperimentConfig:
    data = dict(data)
    for item in overrides or []:
        apply_override(data, item)
    try:
        cfg = ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, source)) from None
    check_catalog_names(cfg, source)
    return cfg


def apply_override(data: dict[str, Any], item: str) -> None:
    """Apply ``dotted.key=value``; the value is read as TOML (numbers, booleans, strings, lists)."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: write key=value, e.g. --set clients.total=20")
    key, raw = item.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"--set {item!r}: the key is empty; write e.g. --set training.rounds=5")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw  # a bare word: treat as a string (profile names, engines)
    if key in ("network.profile", "network.mix") and isinstance(data.get("network"), dict):
        # the two are alternatives: setting one from the command line replaces the other
        data["network"] = {k: v for k, v in data["network"].items() if k not in ("profile", "mix")}
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {item!r}: {part!r} is a value, not a section")
        node = child
    node[parts[-1]] = value


def format_validation_error(exc: ValidationError, source: str) -> str:
    lines = [f"{source}: {exc.error_count()} problem(s):"]
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key; remove it or check its spelling (docs/config.md lists every key)"
        elif isinstance(err.get("input"), (str, int, float, bool)) and err["type"] != "missing":
            msg = f"{msg} (got {err['input']!r})"
        lines.append(f"  {loc or '(top level)'}: {msg}")
    return "\n".join(lines)


def check_catalog_names(cfg: ExperimentConfig, source: str) -> None:
    """Resolve every catalog name now, so a typo fails before a run starts."""
    from fedbw import catalog

    checks: list[tuple[str, Any]] = [
        ("model.name", lambda: catalog.get_model(cfg.model.name)),
        ("clients.device_profile", lambda: catalog.get_device_profile(cfg.clients.device_profile)),
    ]
    checks += [(f"network.mix[{i}].profile", (lambda p=m.profile: catalog.get_link_profile(p)))
               for i, m in enumerate(cfg.network.mix)]
    checks += [(f"network.overrides[{i}].profile", (lambda p=o.profile: catalog.get_link_profile(p)))
               for i, o in enumerate(cfg.network.overrides) if o.profile]
    checks += [(f"datacenter.fabrics[{i}]", (lambda f=f: catalog.get_fabric(f)))
               for i, f in enumerate(cfg.datacenter.fabrics)]
    for key, check in checks:
        try:
            check()
        except CatalogError as exc:
            raise ConfigError(f"{source}: {key}: {exc}") from None
    spec = catalog.get_model(cfg.model.name)
    if cfg.engine != "estimate" and cfg.clients.compute == "real" and not spec.trainable_here:
        raise ConfigError(f"{source}: model.name: {cfg.model.name!r} has no module fedbw can train; "
                          f"use engine = \"estimate\" or clients.compute = \"synthetic\".")
    if not math.isfinite(cfg.training.learning_rate):
        raise ConfigError(f"{source}: training.learning_rate must be finite")


def config_to_dict(cfg: ExperimentConfig) -> dict[str, Any]:
    """Plain data, as written into every run directory (resolved_config.json)."""
    return cfg.model_dump(mode="json")
