"""Experiment configs: pydantic models (:mod:`.sections`, :mod:`.experiment`), TOML loading and
``--set`` overrides (:mod:`.loading`).

Every mistake a person can make in a config ends as one :class:`~fedbw.errors.ConfigError` that names
the key and says what to change; nothing downstream re-validates. Defaults are the quickstart: a small
CNN on scikit-learn's digits, 10 clients on 30 Mbps home uplinks, three rounds.
"""

from fedbw.config.experiment import ExperimentConfig
from fedbw.config.loading import (
    apply_override,
    check_catalog_names,
    config_from_dict,
    config_to_dict,
    format_validation_error,
    load_config,
    read_toml,
)
from fedbw.config.privacy import DPMode
from fedbw.config.sections import Engine, LinkOverride

__all__ = ["DPMode", "Engine", "ExperimentConfig", "LinkOverride", "apply_override", "check_catalog_names",
           "config_from_dict", "config_to_dict", "format_validation_error", "load_config", "read_toml"]
