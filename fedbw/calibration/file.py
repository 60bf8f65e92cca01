"""Calibration files: Flower's costs measured on one machine, with their spread and where they came from.

A file is TOML::

    [calibration]                 # provenance
    schema = "fedbw.calibration"
    schema_version = 2
    created_utc = "2026-12-01T09:00:00Z"
    machine = "Linux-6.1 x86_64, 2 CPU(s)"
    python = "3.11.7"
    flwr = "1.42.0"
    torch = "2.13.0"
    command = "fedbw calibrate"

    [constants.clientapp_start_s] # one table per FlowerCosts field measured
    value = 2.1                   # what the model uses
    spread = 0.4                  # interquartile range of the samples
    interval = [1.9, 2.4]         # 5th–95th percentile over bootstrap fits (fedbw.calibrate.evaluate)
    samples = 12
    how = "ClientApp running − 'Received', minus the SuperExec's mean poll wait"

Fields of :class:`~fedbw.netmodel.FlowerCosts` a file does not name keep their defaults (Flower's module
constants). The catalog ships one file (``fedbw/catalog/flower-costs.toml``), measured on the machine it
names; ``deployment.calibration`` or ``--calibration`` picks another.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from fedbw.errors import ConfigError
from fedbw.files.versioned import CALIBRATION, SCHEMA_KEY, VERSION_KEY
from fedbw.netmodel.flower import FlowerCosts
from fedbw.netmodel.flower_costs import COUNTS
from fedbw.netmodel.secagg_cost import SecAggCostConstants, earlier_form

DEFAULT_FILE = "flower-costs.toml"
_FIELDS = {f.name for f in dataclasses.fields(FlowerCosts)} - {"secagg"}
_SECAGG_FIELDS = {f.name for f in dataclasses.fields(SecAggCostConstants)}
#: Constants the model no longer has, and why (docs/methodology.md, "Cost terms"). A file that names one is
#: read as it was written — it stays the provenance of the results made with it — and the constant is set
#: aside in :attr:`Calibration.retired` instead of being refused.
RETIRED = {
    "server_share": "fitted to 0 in every calibration (2026-12-03/04); removed with its fit and its 4-client run",
    "hop_message_s": "held-out error no lower with it, its interval reaching 0: "
                     "benchmarks/results/cost-terms-before-retiring.json",
    "aggregate_base_s": "fitted to 0, its interval 0: benchmarks/results/cost-terms-before-retiring.json",
    "node_download_share": "absorbed a model error (the ClientApp's pull modelled object by object, where Flower "
                           "stores a message's objects only once all arrived); with the pull fixed it fitted "
                           "below 0 (2026-12-05, docs/fidelity.md, 'Validation 1')",
}


def cpu_name(provenance: dict[str, Any], secagg_machine: str | None) -> str | None:
    """The CPU model a calibration (or its measured messages) was measured on: the provenance's ``cpu``
    (recorded since 2026-12-07), else the one its SecAgg+ crypto was timed on in the same run (the first part
    of ``secagg.machine``); None when neither says."""
    if provenance.get("cpu"):
        return str(provenance["cpu"])
    return (secagg_machine or "").split(",")[0] or None


@dataclass(frozen=True)
class Constant:
    value: float
    spread: float = 0.0
    samples: int = 0
    how: str = ""
    #: 5th–95th percentile over fits of bootstrap resamples of the messages (fedbw.calibrate.evaluate);
    #: None where the file predates it or the constant was not fitted from messages
    interval: tuple[float, float] | None = None


@dataclass(frozen=True)
class Calibration:
    """Measured constants and their provenance; :meth:`costs` gives the model's FlowerCosts."""

    constants: dict[str, Constant]
    provenance: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    secagg: SecAggCostConstants | None = None  #: SecAgg+'s crypto per primitive ([secagg] table)
    retired: dict[str, float] = field(default_factory=dict)  #: constants of :data:`RETIRED` the file names

    def costs(self) -> FlowerCosts:
        """The model's constants, each fitted constant's interval beside them (the clock's spread lanes)."""
        intervals = tuple((k, c.interval[0], c.interval[1]) for k, c in sorted(self.constants.items())
                          if c.interval is not None)
        return FlowerCosts(**{k: c.value for k, c in self.constants.items()}, secagg=self.secagg,
                           intervals=intervals)

    @property
    def cpu(self) -> str | None:
        """The CPU model the constants were measured on: the provenance's (files since 2026-12-07), else the one
        SecAgg+'s crypto was timed on; None when the file says neither. One VM name can come back on another
        kind of host (an AMD EPYC after an Intel Xeon, 2026-12-07), whose CPU costs are not these."""
        return cpu_name(self.provenance, getattr(self.secagg, "machine", None))

    @property
    def fingerprint(self) -> str:
        """What the model reads from this calibration, hashed (``c-`` and 12 hex digits): every constant's
        value and interval and the SecAgg+ primitives, not the provenance or the file's layout. Results
        record it beside the model's version, so two results made with different constants never pass
        as one (a file rescaled to a host's speed is another calibration)."""
        return calibration_fingerprint(self.costs())


def read_calibration(path: str | Path) -> Calibration:
    """Read and check a calibration file; ConfigError saying what to fix."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"calibration file {str(path)!r} not found; write one with `fedbw calibrate --out FILE`")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a TOML calibration file ({exc})") from None
    return _from_dict(data, str(path))


def _from_dict(data: dict[str, Any], source: str) -> Calibration:
    prov = CALIBRATION.check(data.get("calibration"), source)  # the [calibration] table is the head
    consts = dict(data.get("constants", {}))
    retired = {k: float(consts.pop(k).get("value", 0.0)) for k in list(consts)
               if k in RETIRED and isinstance(consts[k], dict)}
    unknown = sorted(set(consts) - _FIELDS)
    if unknown:
        raise ConfigError(f"{source}: unknown constant(s) {', '.join(unknown)}; known: {', '.join(sorted(_FIELDS))}")
    out = {}
    for name, c in consts.items():
        value = c.get("value") if isinstance(c, dict) else None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{source}: constants.{name}.value must be a number >= 0, got {value!r}")
        interval = c.get("interval")
        if interval is not None and not (isinstance(interval, list) and len(interval) == 2
                                         and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 for v in interval) and interval[0] <= interval[1]):
            raise ConfigError(f"{source}: constants.{name}.interval must be [low, high] with low <= high, "
                              f"got {interval!r}")
        out[name] = Constant(float(value), float(c.get("spread", 0.0)), int(c.get("samples", 0)), str(c.get("how", "")),
                             None if interval is None else (float(interval[0]), float(interval[1])))
    crypto = data.get("secagg")
    secagg = None
    if crypto is not None:
        if why := earlier_form(crypto):
            raise ConfigError(f"{source}: [secagg] holds {why}")
        missing = sorted(f for f in _SECAGG_FIELDS - set(crypto) if f not in ("machine", "measured",
                                                                              "client_stage_overhead_s",
                                                                              "server_per_client_s"))
        bad = [k for k, v in crypto.items() if k not in ("machine", "measured")
               and (not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0)]
        if missing or bad or set(crypto) - _SECAGG_FIELDS:
            raise ConfigError(f"{source}: [secagg] must hold the SecAgg+ constants of `fedbw calibrate` (numbers "
                              f">= 0); missing {missing or '-'}, bad {bad or '-'}, "
                              f"unknown {sorted(set(crypto) - _SECAGG_FIELDS) or '-'}")
        secagg = SecAggCostConstants.from_json(crypto)
    return Calibration(out, dict(prov), source, secagg, retired)


#: The provenance key of the host's speed while the constants were measured (seconds; see
#: :func:`fedbw.engines.app_start.host_reference_s`).
HOST_REFERENCE = "host_reference_s"


def at_host_speed(cal: Calibration, reference_s: float) -> Calibration:
    """``cal`` with every CPU constant rescaled to a host whose reference now takes ``reference_s``: each
    constant of CPU time (not the counts, :data:`~fedbw.netmodel.flower_costs.COUNTS`) and each SecAgg+ primitive × reference_s / the
    calibration's own reference. The provenance says by how much and why."""
    own = cal.provenance.get(HOST_REFERENCE)
    if not isinstance(own, (int, float)) or own <= 0 or reference_s <= 0:
        raise ConfigError(f"{cal.source}: no host reference ({HOST_REFERENCE}) to rescale from; "
                          "recalibrate with this fedbw (`fedbw calibrate`)")
    factor = reference_s / own
    consts = {k: c if k in COUNTS else dataclasses.replace(
                  c, value=c.value * factor,
                  interval=None if c.interval is None else (c.interval[0] * factor, c.interval[1] * factor))
              for k, c in cal.constants.items()}
    secagg = None
    if cal.secagg is not None:
        secagg = SecAggCostConstants.from_json({k: (v * factor if isinstance(v, float) else v)
                                                for k, v in cal.secagg.to_json().items()})
    prov = {**cal.provenance, HOST_REFERENCE: reference_s, "rescaled_by": factor,
            "rescaled_from": f"{cal.source} ({HOST_REFERENCE} {own:.3f} s there, {reference_s:.3f} s now)"}
    return Calibration(consts, prov, cal.source, secagg, dict(cal.retired))


def write_calibration(path: str | Path, cal: Calibration) -> Path:
    """Write ``cal`` as TOML (provenance first, then one table per constant)."""
    from fedbw.tomlvalue import format_value

    lines = ["[calibration]"] + [f"{k} = {format_value(v)}" for k, v in CALIBRATION.stamp().items()]
    lines += [f"{k} = {format_value(v)}" for k, v in cal.provenance.items() if k not in (SCHEMA_KEY, VERSION_KEY)]
    for name in sorted(cal.constants):
        c = cal.constants[name]
        lines += ["", f"[constants.{name}]", f"value = {float(c.value)!r}", f"spread = {float(c.spread)!r}",
                  f"samples = {c.samples}", f"how = {format_value(c.how)}"]
        if c.interval is not None:
            lines.append(f"interval = [{float(c.interval[0])!r}, {float(c.interval[1])!r}]")
    if cal.secagg is not None:
        lines += ["", "[secagg]  # SecAgg+'s crypto per primitive, seconds (fedbw.netmodel.secagg_cost)"]
        lines += [f"{k} = {format_value(v)}" for k, v in cal.secagg.to_json().items()]
    from fedbw.files.atomic import write_text_atomic

    # atomic: a calibration stopped while it is written (Ctrl-C, a full disk) leaves the old file whole
    return write_text_atomic(path, "\n".join(lines) + "\n")


@lru_cache(maxsize=8)
def load_costs(path: str | None) -> FlowerCosts:
    """FlowerCosts from a calibration file, or from the catalog's when ``path`` is None."""
    if path is None:
        return default_calibration().costs()
    return read_calibration(path).costs()


def model_stamp(costs: FlowerCosts | None) -> dict[str, str | None]:
    """What makes a model number, for every result built on one (``made_by`` in records headers, study and
    benchmark JSON): the model's version (a hash of its code, :mod:`fedbw.netmodel.version`) and the
    fingerprint of the constants it ran on (None: links only, no Flower costs). ``fedbw docs --check``
    compares a doc's ``made_by`` with this fedbw's model."""
    from fedbw.netmodel.version import model_version

    return {"model_version": model_version(), "calibration": None if costs is None else calibration_fingerprint(costs)}


def calibration_fingerprint(costs: FlowerCosts) -> str:
    """The fingerprint of the constants ``costs`` holds (:attr:`Calibration.fingerprint`): the same for a
    plan's costs and for the file they were read from."""
    import hashlib
    import json

    text = json.dumps(dataclasses.asdict(costs), sort_keys=True, default=list)
    return "c-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def default_calibration() -> Calibration:
    text = resources.files("fedbw.catalog").joinpath(DEFAULT_FILE).read_text(encoding="utf-8")
    return _from_dict(tomllib.loads(text), f"fedbw/catalog/{DEFAULT_FILE}")
