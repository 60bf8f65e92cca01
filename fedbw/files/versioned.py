"""Every file format fedbw writes and reads back, named and versioned one way.

Why one helper: fedbw's files outlive the fedbw that wrote them (a run directory read by a later
``fedbw report``, a calibration file shipped in the catalog, an ``emulate.json`` that calibration fits
from). A reader that meets another layout must refuse it with one line naming the file and what to do,
never guess through back-compatibility branches or fail later with a ``KeyError``. Each format writes
the same two keys at its head — ``schema`` (what the file is) and ``schema_version`` (which layout) —
and is checked by the same code, so no format can forget to check its version or spell it its own way.

The head is the first line of a JSON-lines file, the top object of a JSON file, or a TOML file's
``[calibration]``-style table: whatever :meth:`FileFormat.stamp` was merged into when written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedbw.errors import ConfigError, FedbwError

#: The keys every versioned head carries.
SCHEMA_KEY = "schema"
VERSION_KEY = "schema_version"


@dataclass(frozen=True)
class FileFormat:
    """One on-disk format: its schema name, the layout version this fedbw writes and reads, what a person
    calls it, and what to do with a file of another version."""

    schema: str  #: e.g. "fedbw.records"
    version: int
    noun: str  #: e.g. "records file", used in error messages
    remedy: str  #: what to do with a file of another version, e.g. "rerun the experiment"
    #: older versions this fedbw still reads: the newer one only added optional fields, so an old file
    #: reads as it was written (the readers give the new fields their defaults)
    also_reads: tuple[int, ...] = ()

    def stamp(self) -> dict[str, Any]:
        """The two keys to merge into a new file's head."""
        return {SCHEMA_KEY: self.schema, VERSION_KEY: self.version}

    def problem(self, head: object, source: str | os.PathLike[str]) -> str | None:
        """Why ``head`` is not this format at this version (one line naming ``source``), or None if it is."""
        where = os.fspath(source)
        if not isinstance(head, Mapping) or head.get(SCHEMA_KEY) != self.schema:
            found = head.get(SCHEMA_KEY) if isinstance(head, Mapping) else None
            if isinstance(found, str) and found:
                return f"{where}: a {found!r} file, not a fedbw {self.noun} ({self.schema!r})"
            return f"{where}: not a fedbw {self.noun} (no {self.schema!r} schema at its head); {self.remedy}"
        version = head.get(VERSION_KEY)
        if version != self.version and version not in self.also_reads:
            return (f"{where}: {self.noun} of schema version {version!r}, this fedbw reads version "
                    f"{self.version}; {self.remedy}")
        return None

    def check(self, head: object, source: str | os.PathLike[str],
              error: type[FedbwError] = ConfigError) -> Mapping[str, Any]:
        """``head`` if it is this format at this version; else ``error`` naming ``source`` and the remedy."""
        why = self.problem(head, source)
        if why is not None:
            raise error(why)
        assert isinstance(head, Mapping)
        return head


def read_json(path: str | os.PathLike[str], fmt: FileFormat, missing: str) -> dict[str, Any]:
    """A whole-JSON file of format ``fmt``, its head checked; ConfigError naming the file when it is absent
    (with ``missing``: what to pass instead), unreadable, not JSON, or another format or version."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found; {missing}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not valid JSON or unreadable ({exc}); the {fmt.noun} is damaged") from None
    return dict(fmt.check(data, path))


#: Every format fedbw writes and reads back, by schema name (tests walk this to check each one refuses
#: another version). A format is declared here, next to the others, and imported by its module.
FORMATS: dict[str, FileFormat] = {}


def register(schema: str, version: int, noun: str, remedy: str, also_reads: tuple[int, ...] = ()) -> FileFormat:
    """Declare a format (once per schema name) and return it."""
    if schema in FORMATS:
        raise ValueError(f"file format {schema!r} declared twice")
    fmt = FileFormat(schema, version, noun, remedy, also_reads)
    FORMATS[schema] = fmt
    return fmt


#: records 3 added each model round's interval (``round_interval_s``, ``round_median_s``) and the header's
#: ``model`` (the model's version and the calibration's fingerprint); records 4 a round's ``dropped_clients``
#: (clients.availability): version 2 and 3 files still read (the new fields take their defaults)
RECORDS = register("fedbw.records", 4, "records file", "read it with the fedbw that wrote it, or rerun the experiment",
                   also_reads=(2, 3))
PLAN = register("fedbw.plan", 4, "plan", "rerun the engine with this fedbw")
EVENTS = register("fedbw.events", 2, "event log",
                  "the apps and the engine come from different fedbw versions; reinstall fedbw")
CALIBRATION = register("fedbw.calibration", 2, "calibration file",
                       "write one with this fedbw's `fedbw calibrate --out FILE`")
SWEEP = register("fedbw.sweep", 2, "sweep index", "rerun the sweep with this fedbw (`fedbw sweep --grid`)")
LINK_SERIES = register("fedbw.link-series", 2, "link series", "rerun the emulation with this fedbw")
SHAPER_LEDGER = register("fedbw.shaper-ledger", 2, "shaper ledger", "rerun the shaper with this fedbw")
EMULATE = register("fedbw.emulate", 1, "emulate result (emulate.json)", "rerun the emulation with this fedbw")
MEASURED_MESSAGES = register("fedbw.measured-messages", 1, "measured-messages file",
                             "measure them again with this fedbw (`fedbw calibrate`)")
ALLREDUCE = register("fedbw.allreduce", 1, "AllReduce comparison (allreduce.json)",
                     "rerun the experiment with this fedbw to compare it with AllReduce")
