"""``fedbw calibrate``: Flower's costs on this machine, measured with Flower's real processes.

Every measurement runs one client at a time, and all but one on unshaped loopback (the ``loopback``
link profile), so that nothing contends and the link costs nothing: what remains of each transfer is
Flower's own CPU work, and what remains of each exchange is its polls and its process start. Where the host allows
cgroups, the runs are dilated (``emulate --dilation``) with the device capped to one core of this host and
the server to two, the arrangement dilated emulations use: the constants then describe a device of one
core of this machine, whatever else the host runs. Steps:

1. emulate fedbw's apps (synthetic compute, no training) for models of three sizes — mlp (4 arrays),
   small-cnn (8 arrays, 0.5 MB), resnet18 (62 arrays, 47 MB) — and a probe app shipped with fedbw whose
   messages are one array of 4 and 32 MB (many bytes, few objects: it separates the cost per MiB from
   the cost per object), and fit each transfer's time to
   ``hop_object_s · objects + hop_s_per_mib · MiB`` (the hop term; non-negative least squares);
2. from the SuperNodes' stamped logs: a ClientApp process's start ("Receiving" → the process logs its
   start, minus the SuperExec's mean poll wait), the ClientApp's work before the app's code runs, and
   the round trip of an empty pull (the gap "Sent" → next "Receiving" beyond the 3 s sleep);
3. emulate resnet18 once more on a shaped home link, where the download lasts longer than the
   ClientApp's launch: the share of the download's CPU that delays a ClientApp running beside it on the
   device (``node_download_share``), and the round trips a download makes beyond the model's
   (``download_round_trips``: a round trip costs nothing unshaped);
4. emulate fedbw's apps with real training (small-cnn on digits): what a fresh ClientApp process spends
   on the app's own set-up (importing torch, building the model) besides training;
5. time Flower's FedAvg aggregation in-process: a base and a cost per MiB of replies;
6. time SecAgg+'s primitives (key pairs, ECDH, share splitting and combining, mask expansion) for the
   per-stage crypto model (:mod:`fedbw.netmodel.secagg_cost`).

This module measures (steps 1–6 produce messages and timings); :mod:`.fit` turns them into constants.
The constants go into a calibration file (:mod:`fedbw.calibration.file`) with their spread (interquartile
range) and the number of samples, beside the machine, the date and the versions; every measured message
goes beside it (``<file>.messages.jsonl``, :mod:`fedbw.results.messages`), with the timings in its head,
so ``fedbw calibrate --from-messages`` fits it again without emulating.
"""


from __future__ import annotations

import platform
import statistics
import tempfile
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from fedbw.calibrate.evaluate import bootstrap
from fedbw.calibrate.fit import PROBE, REAL, REAL_MODEL, SHAPED_MODEL, SHAPED_RUNS, UNSHAPED, ShapedRun, fit_all
from fedbw.calibration.file import HOST_REFERENCE, Calibration
from fedbw.errors import ConfigError
from fedbw.netmodel.flower import MIB
from fedbw.netmodel.secagg_cost import SecAggCostConstants
from fedbw.results.messages import MeasuredMessage, read_messages, write_messages

#: (model, compute) of the emulated runs: sizes that separate per-message, per-object and per-MiB costs.
SYNTHETIC_MODELS = ("mlp", "small-cnn", "resnet18")
#: Vector lengths of the probe app's one-array messages (float32: 4 and 32 MB).
PROBE_PARAMS = (1_000_000, 8_000_000)
PROBE_APP = Path(__file__).parent / "probe_app"
#: Bootstrap fits behind each constant's interval in the calibration file.
BOOTSTRAP_RESAMPLES = 200
#: Where a calibration file's measured messages go: beside it.
MESSAGES_SUFFIX = ".messages.jsonl"

Step = Callable[[str, int, int], None]  #: (what, step, steps) → progress


@dataclass
class Measurements:
    """Everything ``fedbw calibrate`` measured: every emulated message (labelled with its run), the
    aggregation timings, SecAgg+'s primitives, the host's reference speed around the runs, and how the
    runs were arranged. The fit (:func:`fedbw.calibrate.fit.fit_all`) reads nothing else."""

    messages: list[MeasuredMessage] = field(default_factory=list)
    aggregation: list[list[float]] = field(default_factory=list)  #: (replies, MiB each, best seconds)
    secagg: dict[str, Any] | None = None  #: SecAggCostConstants.to_json()
    references: list[float] = field(default_factory=list)  #: host_reference_s before, between, after
    dilation: float = 1.0
    capped: bool = False
    provenance: dict[str, Any] = field(default_factory=dict)

    def head(self) -> dict[str, Any]:
        return {"aggregation": self.aggregation, "secagg": self.secagg, "host_references_s": self.references,
                "dilation": self.dilation, "devices_cpu_capped": self.capped, "provenance": self.provenance}


def messages_path(calibration_path: str | Path) -> Path:
    """Where the measured messages of the calibration file at ``calibration_path`` are kept."""
    p = Path(calibration_path)
    return p.with_name(p.stem + MESSAGES_SUFFIX)


def write_measurements(path: str | Path, m: Measurements) -> Path:
    return write_messages(path, m.messages, m.head())


def read_measurements(path: str | Path) -> Measurements:
    """A measured-messages file as :class:`Measurements`; ConfigError naming the file when it lacks a part."""
    head, messages = read_messages(path)
    try:
        return Measurements(messages, [list(map(float, s)) for s in head["aggregation"]], head.get("secagg"),
                            [float(r) for r in head["host_references_s"]], float(head["dilation"]),
                            bool(head["devices_cpu_capped"]), dict(head.get("provenance") or {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: the head lacks what the fit needs ({type(exc).__name__}: {exc}); "
                          "measure again with `fedbw calibrate`") from None


def calibration_of(m: Measurements, command: str | None = None) -> Calibration:
    """The calibration the measurements give (fitted now, each constant with its bootstrap interval;
    ``command`` replaces the recorded one)."""
    prov = {**m.provenance, "dilation": m.dilation, "devices_cpu_capped": m.capped}
    if command and command != m.provenance.get("command"):  # fitted again: keep how it was measured too
        prov = {**prov, "measured_by": m.provenance.get("command", "?"), "command": command}
    if m.references:
        prov[HOST_REFERENCE] = statistics.median(m.references)
    try:
        secagg = SecAggCostConstants.from_json(m.secagg) if m.secagg else None
    except ValueError as exc:  # constants of an earlier form: measuring them again takes seconds
        raise ConfigError(f"the measured messages hold {exc}") from None
    constants = fit_all(m.messages, m.aggregation)
    intervals = bootstrap(m.messages, m.aggregation, resamples=BOOTSTRAP_RESAMPLES)
    constants = {k: replace(c, interval=intervals.get(k)) for k, c in constants.items()}
    return Calibration(constants, prov, secagg=secagg)


def _config(model: str, compute: str, rounds: int, out: Path, dilation: float = 1.0,
            profile: str = "loopback", clients: int = 1, overrides: list[dict[str, float]] | None = None) -> Any:
    from fedbw.config import config_from_dict

    return config_from_dict({
        "name": f"calibrate-{model}-{compute}", "engine": "emulate", "seed": 0, "output_dir": str(out),
        "model": {"name": model}, "data": {"dataset": "auto" if compute == "real" else "synthetic"},
        "clients": {"total": clients, "per_round": clients, "compute": compute, "device_profile": "dc-gpu"},
        "training": {"rounds": rounds, "local_epochs": 1}, "network": {"profile": profile, "overrides": overrides or []},
        "server": {"link": "none"}, "emulate": {"keep_logs": False, "dilation": dilation}})


def _emulated_messages(run: str, model: str, compute: str, rounds: int, out: Path, dilation: float = 1.0,
                       profile: str = "loopback", clients: int = 1,
                       overrides: list[dict[str, float]] | None = None) -> list[MeasuredMessage]:
    """Every message of one emulated run that completed, labelled ``run`` and ``model``."""
    from fedbw.engines.emulate.run import read_messages_of_run
    from fedbw.runner import run_experiment

    result = run_experiment(_config(model, compute, rounds, out, dilation, profile, clients, overrides))
    assert result.run_dir is not None
    return [replace(m, run=run, model=model) for m in read_messages_of_run(result.run_dir) if m.error is None]


def _probe_messages(num_params: int, rounds: int, dilation: float = 1.0) -> list[MeasuredMessage]:
    """The probe app's train messages on one unshaped client (link times only: the probe has no events)."""
    from fedbw.engines.emulate import emulate_app
    from fedbw.engines.emulate.clients import clients_for_profile
    from fedbw.netmodel.payload import (DOWN_OVERHEAD_OBJECTS, MESSAGE_OVERHEAD_BYTES, UP_OVERHEAD_OBJECTS,
                                        array_bytes, message_objects)

    res = emulate_app(PROBE_APP, clients_for_profile(1, "loopback"),
                      run_config={"num-server-rounds": rounds, "num-params": num_params}, dilation=dilation)
    nbytes = MESSAGE_OVERHEAD_BYTES + array_bytes(num_params, 1, 4)
    return [MeasuredMessage(round=m.round or 0, client_id=m.client_id, stage="train", bytes_down=m.down.bytes,
                            bytes_up=m.up.bytes, flower_bytes_down=nbytes, flower_bytes_up=nbytes,
                            t_down_s=m.down.duration_s, t_up_s=m.up.duration_s, t_compute_s=0.0, t_framework_s=0.0,
                            total_s=m.down.duration_s + m.up.duration_s, parts={},
                            objects_down=message_objects(1, nbytes, DOWN_OVERHEAD_OBJECTS),
                            objects_up=message_objects(1, nbytes, UP_OVERHEAD_OBJECTS), run=PROBE,
                            model=f"probe-{num_params}")
            for m in res.messages if m.span.message_type == "train" and (m.round or 0) > 0 and m.span.complete]


def aggregation_samples(repeats: int = 3) -> list[list[float]]:
    """Flower's FedAvg aggregation of k replies of n MiB, in-process: (k, n, best of ``repeats`` seconds)."""
    from flwr.server.strategy.aggregate import aggregate

    rng = np.random.default_rng(0)
    out = []
    for mib in (1, 16, 64):
        arrays = [rng.standard_normal(mib * MIB // 4, dtype=np.float32)]
        for k in (2, 4, 8):
            results = [(arrays, 10) for _ in range(k)]
            out.append([float(k), float(mib), min(timeit.repeat(lambda: aggregate(results), repeat=repeats, number=1))])
    return out


def provenance(command: str) -> dict[str, Any]:
    def version(pkg: str) -> str:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "-"

    import os

    from fedbw.collectives.machine import cpu_model

    # the CPU's model too: a shared VM can come back on another kind of host, whose CPU costs differ
    # (2026-12-07: an AMD EPYC where every calibration so far had an Intel Xeon, ECDH 1.9× slower)
    return {"created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": f"{platform.platform()}, {os.cpu_count()} CPU(s)", "cpu": cpu_model(),
            "python": platform.python_version(),
            "flwr": version("flwr"), "torch": version("torch"), "fedbw": version("fedbw"), "command": command}


def calibration_dilation(value: float | str = "auto") -> tuple[float, bool]:
    """The dilation calibration runs under, and whether its devices are CPU-capped.

    "auto": dilated by 2 with each device capped to one core of this host (the server to two) when the
    host allows cgroups — the arrangement a dilated emulation runs devices in, so the constants describe
    a device of one core of this machine whatever else the host is doing; else undilated.
    """
    from fedbw.processes.cpu_cap import cgroup_root

    capped = not isinstance(cgroup_root(), str)
    if value == "auto":
        return (2.0 if capped else 1.0), capped
    k = float(value)
    return k, capped and k > 1


def measure(rounds: int = 12, step: Step = lambda what, i, n: None, command: str = "fedbw calibrate",
            workdir: Path | None = None, dilation: float | str = "auto") -> Measurements:
    """Run every measurement of the module docstring (about 30 minutes on 2 cores at 12 rounds a run)."""
    from fedbw.engines.app_start import host_reference_s
    from fedbw.fl.privacy.costs import measure_secagg_costs

    k, capped = calibration_dilation(dilation)
    shaped: list[ShapedRun] = list(SHAPED_RUNS.values())
    steps = len(SYNTHETIC_MODELS) + len(PROBE_PARAMS) + len(shaped) + 2
    m = Measurements(dilation=k, capped=capped, provenance=provenance(command))
    if capped:  # what a capped device's CPU costs depends on the caps' period (docs/fidelity.md)
        from fedbw.config.sections import EmulateConfig

        m.provenance["cap_period_ms"] = EmulateConfig().cap_period_ms
    m.references.append(host_reference_s())  # the host's speed before, between and after the measurements
    with tempfile.TemporaryDirectory(prefix="fedbw-calibrate-", dir=workdir) as tmp:
        out = Path(tmp)
        for i, model in enumerate(SYNTHETIC_MODELS):
            step(f"emulate {model} (synthetic compute) on unshaped loopback", i, steps)
            m.messages += _emulated_messages(UNSHAPED, model, "synthetic", rounds, out, k)
        for i, n in enumerate(PROBE_PARAMS):
            step(f"emulate the probe app ({4 * n / 1e6:.0f} MB in one array)", len(SYNTHETIC_MODELS) + i, steps)
            m.messages += _probe_messages(n, rounds, k)
        m.references.append(host_reference_s())
        for i, r in enumerate(shaped):
            step(f"emulate {SHAPED_MODEL} (synthetic compute) shaped: {r.label}", steps - 2 - len(shaped) + i, steps)
            m.messages += _emulated_messages(r.label, SHAPED_MODEL, "synthetic", max(2, round(rounds * r.rounds_share)),
                                             out, k, r.profile, overrides=r.overrides())
        step(f"emulate {REAL_MODEL} (real training)", steps - 2, steps)
        m.messages += _emulated_messages(REAL, REAL_MODEL, "real", rounds, out, k)
    step("time Flower's FedAvg aggregation", steps - 1, steps)
    m.aggregation = aggregation_samples()
    step("time SecAgg+'s crypto (keys, shares, masks)", steps, steps + 1)
    m.secagg = measure_secagg_costs(repeats=5).to_json()
    m.references.append(host_reference_s())
    step("done", steps + 1, steps + 1)
    return m
