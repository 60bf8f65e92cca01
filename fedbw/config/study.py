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

A study may also have a grid: settings whose every combination (a *cell*) each variant runs in, so the
overhead of a variant against the baseline can be read along a model size or a cohort size::

    [study.grid]                 # every combination × every variant; the baseline is per cell
    "model.name" = ["small-cnn", "resnet18"]
    "clients.per_round" = [10, 100, 1000]

A cell's runs are named ``<variant>@<values>`` (``secagg-packed@resnet18-100``); its overrides apply after
``[base]`` and before the variant's own ``set``.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
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
    grid: dict[str, list[Any]] = Field(default_factory=dict, description="settings (config keys) whose every "
                                       "combination each variant runs in; the baseline is compared per combination")

    @field_validator("grid")
    @classmethod
    def _grid_values(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in v.items():
            if not key or any(not p for p in key.split(".")):
                raise ValueError(f"{key!r}: a grid key is a config key, e.g. \"clients.per_round\"")
            if not values:
                raise ValueError(f"{key}: list at least one value")
            if any(isinstance(x, (dict, list)) for x in values):
                raise ValueError(f"{key}: values must be numbers, strings or booleans")
            if len({repr(x) for x in values}) != len(values):
                raise ValueError(f"{key}: a value appears twice")
        return v

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
    """One run of a study: a variant (``kind``, the name in the file) in one grid cell."""

    name: str  #: ``kind`` alone, or ``kind@values`` in a grid
    config: ExperimentConfig
    overrides: tuple[str, ...]  #: the cell's settings, then the variant's own
    kind: str = ""  #: the variant's name in the study file (the baseline is one)
    cell: tuple[tuple[str, Any], ...] = ()  #: the grid's (key, value) pairs of this run

    @property
    def cell_label(self) -> str:
        return cell_label(self.cell)


def cell_label(cell: tuple[tuple[str, Any], ...] | dict[str, Any]) -> str:
    """A grid cell's values joined by '-' ('' without a grid): short enough for a directory name."""
    items = cell.items() if isinstance(cell, dict) else cell
    return "-".join(str(v) for _, v in items)


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
    grid: dict[str, list[Any]] = field(default_factory=dict)


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
    grid = spec.study.grid
    cells = [tuple(zip(grid, values)) for values in itertools.product(*grid.values())]
    variants = []
    for cell in cells:
        settings = [f"{k}={format_value(val)}" for k, val in cell]
        for i, v in enumerate(spec.study.variants):
            name = f"{v.name}@{cell_label(cell)}" if cell else v.name
            where = f"{source}: study.variants[{i}] ({name})"
            items = [*base_overrides, *settings, *v.set]
            try:
                cfg = config_from_dict(copy.deepcopy(spec.base), items, source=where)
            except ConfigError as exc:
                msg = str(exc)
                raise ConfigError(msg if msg.startswith(where) else f"{where}: {msg}") from None
            if cfg.engine != base.engine:
                raise ConfigError(f"{where}: engine = {cfg.engine!r}: every variant runs on the study's engine "
                                  f"({base.engine!r}); remove engine from its set, or pass --engine")
            try:
                config_accountant(cfg)  # a max_epsilon below one round's ε fails now, not after others ran
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            variants.append(Variant(name, cfg, (*settings, *v.set), v.name, cell))
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: study.grid: two cells print the same values ({', '.join(sorted(names))}); "
                          "make the values distinct")
    return Study(name=spec.study.name, source=source, profiles=list(spec.study.profiles), variants=variants,
                 baseline=spec.study.baseline or spec.study.variants[0].name, engine=base.engine,
                 output_dir=base.output_dir, grid={k: list(v) for k, v in grid.items()})
