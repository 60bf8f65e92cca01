"""The notes under docs/fidelity.md's agreement tables: which runs an earlier run of the benchmark measured,
and how fast the host was beside each emulate run against the calibration."""

from __future__ import annotations

import re
from typing import Any


def calibration_note(data: dict[str, Any]) -> str:
    """Which calibration gave the model Flower's costs: the catalog's, or a file measured for this run (the
    benchmark's ``--calibration``, kept beside its results so that the table can be made again)."""
    cal = data.get("calibration")
    if not cal:
        return ""
    where = cal.get("file", "catalog")
    which = "the catalog's calibration" if where == "catalog" else f"the calibration `{where}`"
    return f" Flower costs from {which} ({cal.get('created_utc', '?')}, {cal.get('machine', '?')})."


def speed_note(data: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """How fast the host was beside each emulate run against the calibration (its reference: a fresh
    ClientApp load, timed before and after the run), and whether the model's CPU constants were rescaled
    by it."""
    factors = [r["host_speed"] for r in rows if r.get("host_speed") is not None]
    if not factors:
        return ""
    span = f"×{min(factors):.2f}" + (f"–{max(factors):.2f}" if max(factors) != min(factors) else "")
    if data.get("rescaled_to_host_speed"):
        return (f" The model's CPU constants were rescaled to this host's speed around each emulate run ({span}: "
                "a fresh ClientApp load timed before and after it against the calibration's own; "
                "docs/methodology.md).")
    return (f" The host's reference around each emulate run (a fresh ClientApp load, timed before and after it) "
            f"took {span} the calibration's; the model used the calibration as it is (docs/methodology.md).")


def reused_note(reused: list[dict[str, Any]]) -> str:
    """Which runs an earlier run of the benchmark measured (``--reuse``), and when they started (their
    environment.json, else the time in their directory's name): those numbers are older than the table's
    date."""
    if not reused:
        return ""
    by_engine: dict[str, list[str]] = {}
    for r in reused:
        if r.get("started_utc"):  # the run's environment.json: 2026-12-01T18:12:04Z
            hhmm = r["started_utc"][11:16]
        else:
            stamp = re.search(r"-\d{8}-(\d{2})(\d{2})\d{2}$", r["run_dir"])
            hhmm = f"{stamp.group(1)}:{stamp.group(2)}" if stamp else "?"
        by_engine.setdefault(r["engine"], []).append(hhmm)
    parts = [f"{len(t)} {e} run(s) started {min(t)}" + (f"–{max(t)}" if max(t) != min(t) else "") + " UTC"
             for e, t in sorted(by_engine.items())]
    why = " (emulate's round times read no calibration)" if set(by_engine) == {"emulate"} else ""
    return " Reused from an earlier run of this benchmark (`--reuse`), not run again: " + "; ".join(parts) + why + "."
