"""Name lookup with a helpful error, shared by every catalog."""

from __future__ import annotations

import difflib
from typing import Mapping, TypeVar

from fedbw.errors import CatalogError

T = TypeVar("T")


def lookup(table: Mapping[str, T], name: str, kind: str, listing_command: str) -> T:
    """Return ``table[name]`` or raise a CatalogError that suggests the closest names."""
    try:
        return table[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(table), n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise CatalogError(
            f"unknown {kind} {name!r}.{hint} Known: {', '.join(sorted(table))} (see `{listing_command}`)."
        ) from None
