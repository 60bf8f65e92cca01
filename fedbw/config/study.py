"""The study file: ``[base]`` (an experiment config) plus ``[study]`` (profiles and variants).

Example (experiments/privacy-overhead.toml)::

    [base]                       # any experiment config, validated as one
    engine = "simulate"
    [base.clients]
    total = 6

    [study]
    name = "privacy-overhead"
    profiles = ["home-30", "home-50", "home-80"]
    baseline = "plain"           # uplink ratios are against this variant (default: the first)

    [[study.variants]]
    name = "plain"

    [[study.variants]]
    name = "secagg-packed"
    set = ["privacy.secagg.enabled=true", "privacy.secagg.mode=\\"packed\\""]

Each variant is the base with its ``set`` entries applied (the syntax of ``--set``); every variant is
validated before anything runs, and an error names the variant and the key.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fedbw.config import ExperimentConfig, config_from_dict, format_validation_error, read_toml
from fedbw.errors import CatalogError, ConfigError
from fedbw.tomlvalue import format_value
from fedbw.config.accounting import config_accountant

#: Engines a study can run: both lay bytes on the virtual network clock, so a round can be re-timed
#: on any profile. emulate's clock is the real one: re-timing would discard what it measured.
STUDY_ENGINES = ("simulate", "estimate")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VariantSpec(_Model):
    name: str = Field(min_length=1, description="short label, unique in the study (a column of the table)")
    set: list[str] = Field(default_factory=list, description="overrides of [base], as `--set key=value`")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        if any(ch in v for ch in "/\\ \t|[]") or v.startswith("."):
            raise ValueError("use letters, digits, '-', '_' or '+' (it names a directory and a table row)")
        return v

    @field_validator("set")
    @classmethod
    def _key_values(cls, v: list[str]) -> list[str]:
        for item in v:
            key = item.split("=", 1)[0].strip()
            if "=" not in item or not key or any(not p for p in key.split(".")):
                raise ValueError(f"{item!r}: write key=value, e.g. \"privacy.secagg.enabled=true\"")
        return v


class StudySpec(_Model):
    name: str = Field(min_length=1)
    profiles: list[str] = Field(min_length=1, description="link profiles every variant is re-timed on")
    variants: list[VariantSpec] = Field(min_length=1)
    baseline: str | None = Field(None, description="variant the uplink ratio is against (default: the first)")

    @model_validator(mode="after")
    def _consistent(self) -> "StudySpec":
        names = [v.name for v in self.variants]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"variant names must be unique; {', '.join(dupes)} appear more than once")
        if len(set(self.profiles)) != len(self.profiles):
            raise ValueError("profiles lists a profile twice; list each once")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not a variant; use one of {', '.join(names)}")
        return self


class StudyFile(_Model):
    base: dict[str, Any] = Field(default_factory=dict, description="the experiment config every variant starts from")
    study: StudySpec


@dataclass(frozen=True)
class Variant:
    name: str
    config: ExperimentConfig
    overrides: tuple[str, ...]


@dataclass(frozen=True)
class Study:
    """A validated study: every variant's config is resolved and checked."""

    name: str
    source: str
    profiles: list[str]
    variants: list[Variant]
    baseline: str
    engine: str
    output_dir: str


def load_study(path: str | Path, overrides: list[str] | None = None, engine: str | None = None) -> Study:
    """Read and validate a study file; ``overrides`` apply to ``[base]`` (before each variant's own)."""
    data = read_toml(path, "study", "e.g. experiments/privacy-overhead.toml")
    return study_from_dict(data, overrides, engine, source=str(path))


def study_from_dict(data: dict[str, Any], overrides: list[str] | None = None, engine: str | None = None,
                    source: str = "study") -> Study:
    if "study" not in data:
        # (no square brackets in messages: the CLI prints them as Rich markup, which would eat "[study]")
        hint = " (this looks like an experiment config: use `fedbw run`)" if "base" not in data else ""
        raise ConfigError(f"{source}: no study table{hint}; a study file has a base table (an experiment config) "
                          f"and a study table with name, profiles and study.variants entries")
    try:
        spec = StudyFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, source)) from None
    if engine is not None and engine not in STUDY_ENGINES:
        raise ConfigError(f"--engine {engine!r}: a study runs on {' or '.join(STUDY_ENGINES)} (it re-times every "
                          f"round on each profile, which needs the virtual network clock)")
    from fedbw import catalog

    for i, p in enumerate(spec.study.profiles):
        try:
            catalog.get_link_profile(p)
        except CatalogError as exc:
            raise ConfigError(f"{source}: study.profiles[{i}]: {exc}") from None
    base_overrides = list(overrides or []) + ([f"engine={format_value(engine)}"] if engine else [])
    base = config_from_dict(copy.deepcopy(spec.base), base_overrides, source=f"{source}: base")
    if base.engine not in STUDY_ENGINES:
        raise ConfigError(f"{source}: base.engine = {base.engine!r}: a study runs on {' or '.join(STUDY_ENGINES)}; "
                          f"set engine there or pass --engine")
    variants = []
    for i, v in enumerate(spec.study.variants):
        where = f"{source}: study.variants[{i}] ({v.name})"
        items = [*base_overrides, *v.set]
        try:
            cfg = config_from_dict(copy.deepcopy(spec.base), items, source=where)
        except ConfigError as exc:
            msg = str(exc)
            raise ConfigError(msg if msg.startswith(where) else f"{where}: {msg}") from None
        if cfg.engine != base.engine:
            raise ConfigError(f"{where}: engine = {cfg.engine!r}: every variant runs on the study's engine "
                              f"({base.engine!r}); remove engine from its set, or pass --engine")
        try:
            config_accountant(cfg)  # a max_epsilon below one round's ε fails now, not after other variants ran
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        variants.append(Variant(v.name, cfg, tuple(v.set)))
    return Study(name=spec.study.name, source=source, profiles=list(spec.study.profiles), variants=variants,
                 baseline=spec.study.baseline or variants[0].name, engine=base.engine, output_dir=base.output_dir)
