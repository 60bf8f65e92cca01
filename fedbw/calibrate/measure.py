"""``fedbw calibrate``: Flower's costs on this machine, measured with Flower's real processes.

Every measurement but one runs one client at a time, and all but two on unshaped loopback (the ``loopback``
link profile), so that nothing contends and the link costs nothing: what remains of each transfer is
Flower's own CPU work, and what remains of each exchange is its polls and its process start. The one with
four clients is there to make them contend, at the SuperLink. Where the host allows
cgroups, the runs are dilated (``emulate --dilation``) with the device capped to one core of this host and
the server to two, the arrangement dilated emulations use: the constants then describe a device of one
core of this machine, whatever else the host runs. Steps:

1. emulate fedbw's apps (synthetic compute, no training) for models of three sizes — mlp (4 arrays),
   small-cnn (8 arrays, 0.5 MB), resnet18 (62 arrays, 47 MB) — and a probe app shipped with fedbw whose
   messages are one array of 4 and 32 MB (many bytes, few objects: it separates the cost per MiB from
   the cost per object), and fit each transfer's time to
   ``hop_message_s + hop_object_s · objects + hop_s_per_mib · MiB`` (non-negative least squares);
2. from the SuperNodes' stamped logs: a ClientApp process's start ("Receiving" → the process logs its
   start, minus the SuperExec's mean poll wait), the ClientApp's work before the app's code runs, and
   the round trip of an empty pull (the gap "Sent" → next "Receiving" beyond the 3 s sleep);
3. emulate resnet18 once more on a shaped home link, where the download lasts longer than the
   ClientApp's launch: the share of the download's CPU that delays a ClientApp running beside it on the
   device (``node_download_share``), and the round trips a download makes beyond the model's
   (``download_round_trips``: a round trip costs nothing unshaped); then the same with four clients,
   whose transfers overlap: the share
   of the hop's object CPU that queues at the SuperLink (``server_share``, :mod:`.server_share`);
4. emulate fedbw's apps with real training (small-cnn on digits): what a fresh ClientApp process spends
   on the app's own set-up (importing torch, building the model) besides training;
5. time Flower's FedAvg aggregation in-process: a base and a cost per MiB of replies;
6. time SecAgg+'s primitives (key pairs, ECDH, share splitting and combining, mask expansion) for the
   per-stage crypto model (:mod:`fedbw.netmodel.secagg_cost`).

The constants go into a calibration file (:mod:`fedbw.calibration.file`) with their spread (interquartile
range) and the number of samples, beside the machine, the date and the versions.
"""

from __future__ import annotations

import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from fedbw.calibration.file import HOST_REFERENCE, Calibration, Constant
from fedbw.netmodel.flower import MIB, FlowerCosts

#: (model, compute) of the emulated runs: sizes that separate per-message, per-object and per-MiB costs.
SYNTHETIC_MODELS = ("mlp", "small-cnn", "resnet18")
REAL_MODEL = "small-cnn"
#: Vector lengths of the probe app's one-array messages (float32: 4 and 32 MB).
PROBE_PARAMS = (1_000_000, 8_000_000)
PROBE_APP = Path(__file__).parent / "probe_app"

Step = Callable[[str, int, int], None]  #: (what, step, steps) → progress


#: The shaped run: a download long enough that the ClientApp is launched while it still arrives.
SHAPED_MODEL, SHAPED_PROFILE = "resnet18", "home-30"


def _config(model: str, compute: str, rounds: int, out: Path, dilation: float = 1.0,
            profile: str = "loopback", clients: int = 1) -> Any:
    from fedbw.config import config_from_dict

    return config_from_dict({
        "name": f"calibrate-{model}-{compute}", "engine": "emulate", "seed": 0, "output_dir": str(out),
        "model": {"name": model}, "data": {"dataset": "auto" if compute == "real" else "synthetic"},
        "clients": {"total": clients, "per_round": clients, "compute": compute, "device_profile": "dc-gpu"},
        "training": {"rounds": rounds, "local_epochs": 1}, "network": {"profile": profile},
        "server": {"link": "none"}, "emulate": {"keep_logs": False, "dilation": dilation}})


def _emulated_messages(model: str, compute: str, rounds: int, out: Path, dilation: float = 1.0,
                       profile: str = "loopback", clients: int = 1) -> list[dict[str, Any]]:
    """Every message of one emulated run, as its emulate.json holds it."""
    from fedbw.engines.emulate.run import read_summary
    from fedbw.runner import run_experiment

    result = run_experiment(_config(model, compute, rounds, out, dilation, profile, clients))
    assert result.run_dir is not None
    data = read_summary(result.run_dir)
    return [{**m, "model": model} for m in data["messages"] if m.get("error") is None]


def _probe_messages(num_params: int, rounds: int, dilation: float = 1.0) -> list[dict[str, Any]]:
    """The probe app's train messages on one unshaped client, in the shape of emulate.json's messages."""
    from fedbw.engines.emulate import emulate_app
    from fedbw.engines.emulate.clients import clients_for_profile
    from fedbw.netmodel.payload import (DOWN_OVERHEAD_OBJECTS, MESSAGE_OVERHEAD_BYTES, UP_OVERHEAD_OBJECTS,
                                        array_bytes, message_objects)

    res = emulate_app(PROBE_APP, clients_for_profile(1, "loopback"),
                      run_config={"num-server-rounds": rounds, "num-params": num_params}, dilation=dilation)
    nbytes = MESSAGE_OVERHEAD_BYTES + array_bytes(num_params, 1, 4)
    return [{"model": f"probe-{num_params}", "client_id": m.client_id, "t_down_s": m.down.duration_s,
             "t_up_s": m.up.duration_s, "flower_bytes_down": nbytes, "flower_bytes_up": nbytes,
             "objects_down": message_objects(1, nbytes, DOWN_OVERHEAD_OBJECTS),
             "objects_up": message_objects(1, nbytes, UP_OVERHEAD_OBJECTS)}
            for m in res.messages if m.span.message_type == "train" and (m.round or 0) > 0 and m.span.complete]


def nonnegative_lstsq(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares with every coefficient ≥ 0 (a column whose fit goes negative is dropped)."""
    keep = list(range(a.shape[1]))
    while True:
        x, *_ = np.linalg.lstsq(a[:, keep], b, rcond=None)
        if (x >= 0).all() or not keep:
            out = np.zeros(a.shape[1])
            out[keep] = x
            return out
        keep.pop(int(np.argmin(x)))


def _spread(values: list[float]) -> float:
    if len(values) < 4:
        return (max(values) - min(values)) if values else 0.0
    q = statistics.quantiles(values, n=4)
    return q[2] - q[0]


def fit_hops(messages: list[dict[str, Any]]) -> dict[str, Constant]:
    """Each unshaped transfer (down and up) as per-message + per-object + per-MiB CPU time."""
    rows, times = [], []
    for m in messages:
        for d in ("down", "up"):
            if m.get(f"objects_{d}"):
                rows.append([1.0, float(m[f"objects_{d}"]), float(m[f"flower_bytes_{d}"]) / MIB])
                times.append(float(m[f"t_{d}_s"]))
    a, b = np.array(rows), np.array(times)
    x = nonnegative_lstsq(a, b)
    residual = b - a @ x
    spread = float(np.percentile(np.abs(residual), 75)) if len(residual) else 0.0
    how = ("least squares (≥ 0) of every unshaped transfer's time on 1, objects and MiB "
           f"({len(b)} transfers; spread = 75th percentile of |residual|)")
    return {"hop_message_s": Constant(float(x[0]), spread, len(b), how),
            "hop_object_s": Constant(float(x[1]), spread, len(b), how),
            "hop_s_per_mib": Constant(float(x[2]), spread, len(b), how)}


def _from_receiving(m: dict[str, Any]) -> tuple[float, float, float]:
    """A message's ClientApp start logged, every object on the SuperNode and the app's code running, in
    seconds from "Receiving" (a message without launch_s, from before fedbw recorded it: its download
    taken as instant)."""
    t_start = float(m.get("launch_s") if m.get("launch_s") is not None else m["process_start_s"])
    t_received = t_start - float(m["process_start_s"])
    return t_start, t_received, t_received + float(m["parts"]["clientapp_start_s"])


def fit_process(messages: list[dict[str, Any]], costs: FlowerCosts) -> dict[str, Constant]:
    """ClientApp process start, its work before the app's code, and an empty pull's round trip.

    Each is measured as the model lays it (:class:`fedbw.netmodel.flower.DeploymentClock`): the SuperExec
    launches the process once the SuperNode has *pulled the message* ("Receiving"), so a large message's
    process starts while its objects still download; counting from "Received" instead would make that
    start look short and bias the median low. The work after the start is what remains once the
    ClientApp's own pull has every object (:func:`fedbw.netmodel.flower.pull_behind`, Flower's backoff):
    the fixed part plus the per-MiB local pull.
    """
    from fedbw.netmodel.flower import pull_behind

    timed = [m for m in messages if m.get("process_start_s") is not None]
    launches, rows, work = [], [], []
    for m in timed:
        t_start, t_received, t_app = _from_receiving(m)
        launches.append(t_start - costs.superexec_poll_s / 2)
        t_has = pull_behind(t_start, 0.0, t_received, int(m.get("objects_down") or 1), costs)
        rows.append([1.0, float(m["flower_bytes_down"]) / MIB])
        work.append(t_app - t_has)
    a, b = np.array(rows), np.array(work)
    local_per_mib = float(nonnegative_lstsq(a, b)[1]) if len(b) else 0.0
    other = [float(v) for v in b - a[:, 1] * local_per_mib] if len(b) else []
    gaps = []
    by_client = sorted((m for m in messages if m.get("t_receiving_s") and m.get("t_sent_s")),
                       key=lambda m: (m["model"], m["client_id"], m["t_receiving_s"]))
    for prev, nxt in zip(by_client, by_client[1:]):
        if prev["model"] == nxt["model"] and prev["client_id"] == nxt["client_id"]:
            gap = float(nxt["t_receiving_s"]) - float(prev["t_sent_s"]) - costs.supernode_idle_poll_s
            if 0 <= gap < 1.0:  # the node's own 3 s grid found the message (not a later grid point)
                gaps.append(gap)
    out = {
        "clientapp_start_s": Constant(max(0.0, statistics.median(launches)), _spread(launches), len(launches),
                                      "'Receiving' → the ClientApp process logs its start, minus the SuperExec's "
                                      "mean poll wait (median)"),
        "clientapp_other_s": Constant(max(0.0, statistics.median(other)), _spread(other), len(other),
                                      "ClientApp start logged (or, if later, every object on the SuperNode) → the "
                                      "app's code runs (runtime pull, FAB install, app load), minus the message's "
                                      "pull (median)"),
        "local_s_per_mib": Constant(float(local_per_mib), _spread(other), len(other),
                                    "least squares (≥ 0) of (ClientApp start logged → the app's code runs) on the "
                                    "message's MiB: a pull between two processes of one machine"),
    }
    if gaps:
        out["request_s"] = Constant(statistics.median(gaps), _spread(gaps), len(gaps),
                                    "'Sent' → next 'Receiving' beyond the SuperNode's 3 s sleep: one empty pull "
                                    "(median)")
    return out


def fit_node_share(messages: list[dict[str, Any]], costs: FlowerCosts) -> dict[str, Constant]:
    """The share of a download's hop CPU that delays a ClientApp launched while the download still arrives
    (:func:`fedbw.netmodel.contention.node_cpu_during_download_s`), from a shaped run's messages.

    Per message (times from "Receiving"): what the ClientApp needed beyond the unshaped calibration's
    costs — its measured start of the app's code minus (its own pull behind the download, the local pull,
    the fixed work) — against the download's hop CPU after the launch; least squares through the origin,
    kept within [0, 1]. ``costs`` carries the hop, process and local-pull constants fitted before.
    """
    from fedbw.netmodel.contention import node_cpu_during_download_s
    from fedbw.netmodel.flower import pull_behind

    xs, rs = [], []
    for m in messages:
        if m.get("launch_s") is None or m.get("process_start_s") is None:
            continue
        t_start, t_received, t_app = _from_receiving(m)
        n, nbytes = int(m.get("objects_down") or 1), float(m["flower_bytes_down"])
        predicted = (pull_behind(t_start, 0.0, t_received, n, costs) + costs.local_cpu_s(nbytes)
                     + costs.clientapp_other_s)
        x = node_cpu_during_download_s(1.0, costs.hop_cpu_s(n, nbytes), 0.0, t_received,
                                       t_start - costs.clientapp_start_s)
        if x > 0:
            xs.append(x)
            rs.append(t_app - predicted)
    if not xs:
        return {}
    share = min(1.0, max(0.0, sum(x * r for x, r in zip(xs, rs)) / sum(x * x for x in xs)))
    ratios = [r / x for x, r in zip(xs, rs)]
    return {"node_download_share": Constant(share, _spread(ratios), len(xs),
                                            f"{SHAPED_MODEL} on {SHAPED_PROFILE}, the ClientApp launched during "
                                            "the download: its delay beyond the unshaped costs on the "
                                            "download's hop CPU after the launch (least squares, in [0, 1])")}


def fit_download_round_trips(messages: list[dict[str, Any]], costs: FlowerCosts, link: Any,
                             array_shares: tuple[float, ...] = ()) -> dict[str, Constant]:
    """Round trips a download makes in series beyond the model's (its message's pull, its confirm and its
    objects), from a shaped run: the median of (measured − modelled download) ÷ the link's round trip, ≥ 0.

    The unshaped runs cannot show them (a round trip there costs nothing). Their time on the shaped link is
    what the requests before the first object's body and after the last one add; the median keeps a
    download that met the ServerApp's push (Flower's pull backoff) from moving it.
    """
    from fedbw.netmodel.objects import transfer_objects_s

    if link.rtt_s <= 0:
        return {}
    counts = []
    for m in messages:
        n, nbytes = int(m.get("objects_down") or 1), float(m.get("flower_bytes_down") or 0.0)
        if not nbytes or not m.get("t_down_s"):
            continue
        model = (2 * link.rtt_s + costs.hop_message_s
                 + transfer_objects_s(nbytes, n, link.down_bytes_per_s, link.rtt_s, costs.object_workers,
                                      costs.hop_object_s, costs.hop_s_per_mib / MIB, array_shares))
        counts.append((float(m["t_down_s"]) - model) / link.rtt_s)
    if not counts:
        return {}
    return {"download_round_trips": Constant(
        max(0.0, statistics.median(counts)), _spread(counts), len(counts),
        f"{SHAPED_MODEL} on {SHAPED_PROFILE}: (measured − modelled download) ÷ the round trip, median, ≥ 0")}


def fit_app_setup(messages: list[dict[str, Any]]) -> dict[str, Constant]:
    """fedbw's real-training apps in a fresh process: the app's set-up besides training."""
    other = [float(m["parts"]["app_other_s"]) for m in messages]
    return {"app_setup_s": Constant(statistics.median(other), _spread(other), len(other),
                                    f"app time besides training in a fresh ClientApp process, real training of "
                                    f"{REAL_MODEL} (median): importing torch, building the model")}


def measure_aggregation(repeats: int = 3) -> dict[str, Constant]:
    """Flower's FedAvg aggregation of k replies of n MiB, in-process: base + per-MiB cost."""
    from flwr.server.strategy.aggregate import aggregate

    rng = np.random.default_rng(0)
    rows, times = [], []
    for mib in (1, 16, 64):
        arrays = [rng.standard_normal(mib * MIB // 4, dtype=np.float32)]
        for k in (2, 4, 8):
            results = [(arrays, 10) for _ in range(k)]
            best = min(_timed(lambda: aggregate(results)) for _ in range(repeats))
            rows.append([1.0, float(k * mib)])
            times.append(best)
    x = nonnegative_lstsq(np.array(rows), np.array(times))
    residual = np.array(times) - np.array(rows) @ x
    spread = float(np.percentile(np.abs(residual), 75))
    how = "flwr.server.strategy.aggregate.aggregate of k ∈ {2, 4, 8} replies of {1, 16, 64} MiB, best of 3, fitted"
    return {"aggregate_base_s": Constant(float(x[0]), spread, len(times), how),
            "aggregate_s_per_mib": Constant(float(x[1]), spread, len(times), how)}


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def provenance(command: str) -> dict[str, Any]:
    def version(pkg: str) -> str:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "-"

    import os

    return {"created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": f"{platform.platform()}, {os.cpu_count()} CPU(s)", "python": platform.python_version(),
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


def calibrate(rounds: int = 4, step: Step = lambda what, i, n: None, command: str = "fedbw calibrate",
              workdir: Path | None = None, dilation: float | str = "auto") -> Calibration:
    """Measure Flower's costs on this machine (15–20 minutes on 2 cores); see the module docstring."""
    from fedbw.engines.app_start import host_reference_s
    from fedbw.calibrate.server_share import TOGETHER_CLIENTS, fit_server_share
    from fedbw.catalog import get_model
    from fedbw.engines.emulate.federation import auto_dilation
    from fedbw.links import profile_link

    k, capped = calibration_dilation(dilation)
    steps = len(SYNTHETIC_MODELS) + len(PROBE_PARAMS) + 4
    constants: dict[str, Constant] = {}
    references = [host_reference_s()]  # the host's speed before, between and after the measurements
    with tempfile.TemporaryDirectory(prefix="fedbw-calibrate-", dir=workdir) as tmp:
        out = Path(tmp)
        messages: list[dict[str, Any]] = []
        for i, model in enumerate(SYNTHETIC_MODELS):
            step(f"emulate {model} (synthetic compute) on unshaped loopback", i, steps)
            messages += _emulated_messages(model, "synthetic", rounds, out, k)
        probes: list[dict[str, Any]] = []
        for i, n in enumerate(PROBE_PARAMS):
            step(f"emulate the probe app ({4 * n / 1e6:.0f} MB in one array)", len(SYNTHETIC_MODELS) + i, steps)
            probes += _probe_messages(n, rounds, k)
        constants.update(fit_hops(messages + probes))
        base = FlowerCosts(**{k: c.value for k, c in constants.items()})
        constants.update(fit_process(messages, base))
        references.append(host_reference_s())
        step(f"emulate {SHAPED_MODEL} (synthetic compute) on {SHAPED_PROFILE}", steps - 4, steps)
        shaped = _emulated_messages(SHAPED_MODEL, "synthetic", rounds, out, k, SHAPED_PROFILE)
        constants.update(fit_node_share(shaped, FlowerCosts(**{k: c.value for k, c in constants.items()})))
        link, shares = profile_link(SHAPED_PROFILE).model(), get_model(SHAPED_MODEL).array_shares
        constants.update(fit_download_round_trips(shaped, FlowerCosts(**{k: c.value for k, c in constants.items()}),
                                                  link, shares))
        step(f"emulate {SHAPED_MODEL} on {SHAPED_PROFILE} with {TOGETHER_CLIENTS} clients", steps - 3, steps)
        together = _emulated_messages(SHAPED_MODEL, "synthetic", rounds, out,
                                      max(k, auto_dilation(TOGETHER_CLIENTS)) if capped else k, SHAPED_PROFILE,
                                      TOGETHER_CLIENTS)
        constants.update(fit_server_share(shaped, together, FlowerCosts(**{k: c.value for k, c in constants.items()}),
                                          link, shares))
        step(f"emulate {REAL_MODEL} (real training)", steps - 2, steps)
        constants.update(fit_app_setup(_emulated_messages(REAL_MODEL, "real", rounds, out, k)))
    step("time Flower's FedAvg aggregation", steps - 1, steps)
    constants.update(measure_aggregation())
    step("time SecAgg+'s crypto (keys, shares, masks)", steps, steps + 1)
    from fedbw.fl.privacy.costs import measure_secagg_costs

    secagg = measure_secagg_costs(repeats=5)
    references.append(host_reference_s())
    step("done", steps + 1, steps + 1)
    return Calibration(constants, {**provenance(command), "dilation": k, "devices_cpu_capped": capped,
                                   HOST_REFERENCE: statistics.median(references)}, secagg=secagg)
