"""Errors a user can cause.

Every error a person can trigger with a config, a flag or a file is a :class:`FedbwError`: the CLI
prints its message without a traceback and exits with ``exit_code``. Messages say what to change,
not only what went wrong.
"""

from __future__ import annotations


class FedbwError(Exception):
    """Base class for errors caused by user input or environment, shown without a traceback."""

    exit_code: int = 1


class ConfigError(FedbwError):
    """An experiment config (or an override) is malformed, incomplete or impossible."""

    exit_code = 2


class CatalogError(FedbwError):
    """A named profile, fabric, model or dataset does not exist."""

    exit_code = 2


class RunError(FedbwError):
    """A run could not complete (a child process died, a stage timed out, a budget ran out)."""

    exit_code = 1
