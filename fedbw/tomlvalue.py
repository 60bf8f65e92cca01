"""Values written on a command line (``--set``, ``--run-config``, ``--values``, ``--grid``) read as TOML.

One reader and one writer, so ``--set clients.total=20`` and ``--run-config num-server-rounds=3`` agree
on what ``20``, ``true``, ``"x"`` and ``[1, 2]`` mean; a bare word that is not TOML (``home-30``) is a
string, so profile and engine names need no quotes.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

from fedbw.errors import ConfigError


def parse_value(raw: str) -> Any:
    """``raw`` as a TOML value (numbers, booleans, strings, arrays, inline tables), else the bare string."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw.strip()


def format_value(value: Any) -> str:
    """A Python value as TOML source (the inverse of :func:`parse_value` for scalars and lists)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return json.dumps(str(value))


def split_assignment(item: str, flag: str, example: str) -> tuple[str, Any]:
    """``key=value`` → (key, parsed value); ConfigError naming ``flag`` and an ``example`` otherwise."""
    if "=" not in item:
        raise ConfigError(f"{flag} {item!r}: write key=value, e.g. {flag} {example}")
    key, raw = item.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"{flag} {item!r}: the key is empty; write e.g. {flag} {example}")
    return key, parse_value(raw)
