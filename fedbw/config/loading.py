"""Reading configs: TOML files, ``--set`` overrides, validation errors that name the key.

Every mistake in a config file or an override ends here as one :class:`ConfigError` that names the key
and says what to change.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fedbw.config.experiment import ExperimentConfig
from fedbw.errors import CatalogError, ConfigError
from fedbw.tomlvalue import split_assignment


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
    key, value = split_assignment(item, "--set", "clients.total=20")
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
    """Resolve every catalog name (and trace file) now, so a typo fails before a run starts."""
    from fedbw import catalog
    from fedbw.catalog.traces import load_named_trace

    checks: list[tuple[str, Any]] = [
        ("model.name", lambda: catalog.get_model(cfg.model.name)),
        ("clients.device_profile", lambda: catalog.get_device_profile(cfg.clients.device_profile)),
    ]
    checks += [(f"network.mix[{i}].profile", (lambda p=m.profile: catalog.get_link_profile(p)))
               for i, m in enumerate(cfg.network.mix)]
    checks += [(f"network.overrides[{i}].profile", (lambda p=o.profile: catalog.get_link_profile(p)))
               for i, o in enumerate(cfg.network.overrides) if o.profile]
    checks += [(f"network.mix[{i}].trace", (lambda t=m.trace: load_named_trace(t)))
               for i, m in enumerate(cfg.network.mix) if m.trace]
    checks += [(f"network.overrides[{i}].trace", (lambda t=o.trace: load_named_trace(t)))
               for i, o in enumerate(cfg.network.overrides) if o.trace]
    checks += [(f"datacenter.fabrics[{i}]", (lambda f=f: catalog.get_fabric(f)))
               for i, f in enumerate(cfg.datacenter.fabrics)]
    if cfg.server.link != catalog.NO_SERVER_LINK:
        checks.append(("server.link", lambda: catalog.get_server_link(cfg.server.link)))
    if cfg.deployment.calibration is not None:
        from fedbw.calibration.file import read_calibration

        try:
            read_calibration(cfg.deployment.calibration)
        except ConfigError as exc:
            raise ConfigError(f"{source}: deployment.calibration: {exc}") from None
    if (av := cfg.clients.availability) is not None and av.file is not None:
        from fedbw.traces.availability import read_availability

        checks.append(("clients.availability.file", lambda: read_availability(av.file or "")))
    for key, check in checks:
        try:
            check()
        except (CatalogError, ConfigError) as exc:  # an unknown name, or a trace file that is not one
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
