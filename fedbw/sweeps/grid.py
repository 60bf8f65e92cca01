"""A sweep's grid: ``--grid key=v1,v2`` items read as TOML values, and their cartesian product.

Why a module of its own: the grid is the one thing a sweep is *about*. Parsing it once, here, lets the
runner, the index (sweep.json) and the labels in reports agree on what each point overrides; values are
read with :mod:`fedbw.tomlvalue` so ``--grid`` means what ``--set`` means (``home-30`` is a string,
``0.5`` a float, ``[1, 2]`` a list — commas inside brackets, braces or quotes do not split values).
"""

from __future__ import annotations

import itertools
from typing import Any

from fedbw.errors import ConfigError
from fedbw.results.sweep_index import GridAxis
from fedbw.tomlvalue import format_value, parse_value, split_assignment

#: Keys a sweep owns: every point's runs go into the sweep directory under the point's own name.
RESERVED_KEYS = ("output_dir", "name")
#: More points than this is almost surely a typo (a --range pasted into --grid); say so before running.
MAX_POINTS = 10_000


def split_values(raw: str) -> list[str]:
    """Split ``raw`` at the commas that are not inside brackets, braces or quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(raw):
        if quote:
            if ch == quote and raw[i - 1] != "\\":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(raw[start:i])
            start = i + 1
    parts.append(raw[start:])
    return [p.strip() for p in parts]


def parse_grid(items: list[str]) -> list[GridAxis]:
    """``["network.profile=home-30,home-50", "training.rounds=2,4"]`` → axes; ConfigError on bad input."""
    axes: list[GridAxis] = []
    for item in items:
        key, _ = split_assignment(item, "--grid", "network.profile=home-30,home-50")
        if key in RESERVED_KEYS:
            raise ConfigError(f"--grid {item!r}: {key} is set by the sweep (each point gets its own run "
                              f"directory inside the sweep directory); sweep another key")
        if any(a.key == key for a in axes):
            raise ConfigError(f"--grid names {key} twice; give all its values in one --grid {key}=v1,v2")
        raws = split_values(item.split("=", 1)[1])
        if any(not r for r in raws):
            raise ConfigError(f"--grid {item!r}: an empty value; write e.g. --grid {key}=v1,v2")
        values = tuple(parse_value(r) for r in raws)
        seen = [format_value(v) for v in values]
        if len(set(seen)) != len(seen):
            raise ConfigError(f"--grid {item!r}: a value is repeated; each point must differ")
        axes.append(GridAxis(key, values))
    count = 1
    for a in axes:
        count *= len(a.values)
    if count > MAX_POINTS:
        raise ConfigError(f"the grid has {count:,} points (more than {MAX_POINTS:,}); sweep fewer values")
    return axes


def grid_points(axes: list[GridAxis]) -> list[dict[str, Any]]:
    """Every combination, the first axis varying slowest: ``{key: value}`` per point."""
    if not axes:
        return []
    return [dict(zip((a.key for a in axes), combo)) for combo in itertools.product(*(a.values for a in axes))]


def point_sets(overrides: dict[str, Any]) -> list[str]:
    """A point's overrides as the ``--set`` items they stand for."""
    return [f"{key}={format_value(value)}" for key, value in overrides.items()]
