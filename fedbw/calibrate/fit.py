"""``fedbw calibrate``'s fits: measured messages (:class:`~fedbw.results.messages.MeasuredMessage`) and
timed primitives in, constants out, in one documented order (each step fits with the constants of the steps
before it fixed). Pure arithmetic on the measurements: no Flower process runs here, so a calibration can be
fitted again from its saved messages (``fedbw calibrate --from-messages``).

The order, and what each step reads:

1. ``fit_hops``: every unshaped transfer (fedbw's apps and the probe app), on the hop term's features;
2. ``fit_start`` and ``fit_request``: the SuperNodes' stamps (a ClientApp's start, an empty pull);
3. ``fit_app_code``: the ClientApp's way to the app's code, unshaped and shaped runs together, with 1–2
   (the work before the app's code, the local copy; Flower's pull backoff behind the download is laid by
   the model's own expression, not fitted); ``fit_download_round_trips``: the shaped runs' downloads, with 1;
4. ``fit_app_setup``: the real-training run;
5. ``fit_aggregation``: Flower's FedAvg aggregation timed in-process (samples in the messages file's head).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedbw.calibration.file import Constant
from fedbw.netmodel.flower import MIB, FlowerCosts
from fedbw.netmodel.terms import AGGREGATION, HOP
from fedbw.results.messages import MeasuredMessage

#: The shaped runs' model: a download long enough that the ClientApp is launched while it still arrives.
SHAPED_MODEL, SHAPED_PROFILE = "resnet18", "home-30"
REAL_MODEL = "small-cnn"
#: The labels ``fedbw calibrate`` gives its runs' messages (``MeasuredMessage.run``).
UNSHAPED, PROBE, SHAPED, REAL = "unshaped", "probe", "shaped", "real"


@dataclass(frozen=True)
class ShapedRun:
    """One shaped calibration run of :data:`SHAPED_MODEL`: its label and its link (a profile, with its
    downlink and uplink replaced where given, as a config's ``network.overrides`` does).

    Why several: a ClientApp gets its message only at a point of Flower's pull backoff (1, 2, 4 … s from
    its first try), so downloads of one length sample one or two of those points. The runs' downloads
    (about 3, 6 and 11 s of ResNet-18) end before the first, second and third retry; the fit then sees
    the backoff it models instead of absorbing it into a constant."""

    label: str
    profile: str = SHAPED_PROFILE
    down_mbps: float | None = None
    up_mbps: float | None = None
    rounds_share: float = 1.0  #: of ``fedbw calibrate --rounds`` (the slower runs' rounds are long)

    def overrides(self) -> list[dict[str, float]]:
        """The config's ``network.overrides`` for the run's one client."""
        changed = {k: v for k, v in (("down_mbps", self.down_mbps), ("up_mbps", self.up_mbps)) if v is not None}
        return [{"client": 0, **changed}] if changed else []

    def link(self) -> Any:
        """The run's link as the model sees it."""
        from fedbw.config.sections import LinkOverride
        from fedbw.links import profile_link, with_override

        link = profile_link(self.profile)
        for o in self.overrides():
            link = with_override(link, LinkOverride(**o))  # type: ignore[arg-type]
        return link.model()


#: Every shaped run, by label (a messages file from before the slower runs has only the first).
SHAPED_RUNS = {r.label: r for r in (ShapedRun(SHAPED),
                                    ShapedRun("shaped-72", down_mbps=72.0, up_mbps=300.0, rounds_share=1 / 3),
                                    ShapedRun("shaped-36", down_mbps=36.0, up_mbps=300.0, rounds_share=1 / 3))}


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


def _without(a: np.ndarray, names: Sequence[str], without: frozenset[str]) -> np.ndarray:
    """``a`` with the columns of the constants in ``without`` zeroed: least squares then gives them 0 and
    fits the others as if those terms did not exist (the ablation cross-validation compares)."""
    a = a.copy()
    for i, name in enumerate(names):
        if name in without and a.size:
            a[:, i] = 0.0
    return a


def _spread(values: list[float]) -> float:
    if len(values) < 4:
        return (max(values) - min(values)) if values else 0.0
    q = statistics.quantiles(values, n=4)
    return q[2] - q[0]


def fit_hops(messages: Sequence[MeasuredMessage], without: frozenset[str] = frozenset()) -> dict[str, Constant]:
    """Each unshaped transfer (down and up) as per-message + per-object + per-MiB CPU time."""
    rows, times = [], []
    for m in messages:
        for d in ("down", "up"):
            if getattr(m, f"objects_{d}"):
                rows.append(HOP.row(objects=getattr(m, f"objects_{d}"), nbytes=getattr(m, f"flower_bytes_{d}")))
                times.append(getattr(m, f"t_{d}_s"))
    if not rows:
        return {}
    a, b = _without(np.array(rows), HOP.constants, without), np.array(times)
    x = nonnegative_lstsq(a, b)
    residual = b - a @ x
    spread = float(np.percentile(np.abs(residual), 75))
    how = ("least squares (≥ 0) of every unshaped transfer's time on the hop term's objects and MiB "
           f"({len(b)} transfers; spread = 75th percentile of |residual|)")
    return {k: Constant(float(v), spread, len(b), how) for k, v in zip(HOP.constants, x)}


def from_receiving(m: MeasuredMessage) -> tuple[float, float, float]:
    """A message's ClientApp start logged, every object on the SuperNode and the app's code running, in
    seconds from "Receiving" (a message whose SuperNode logged no "Receiving": its download taken as
    instant)."""
    assert m.process_start_s is not None
    t_start = m.launch_s if m.launch_s is not None else m.process_start_s
    t_received = t_start - m.process_start_s
    return t_start, t_received, t_received + m.parts.get("clientapp_start_s", 0.0)


def fit_start(messages: Sequence[MeasuredMessage], costs: FlowerCosts) -> dict[str, Constant]:
    """A ClientApp process's start: "Receiving" → the process logs its start, less the SuperExec's mean poll
    wait (the clock lays the launch at the pull plus the poll's phase, then the start term), median.

    Counted from "Receiving", not "Received": the SuperExec launches the process once the SuperNode has
    *pulled the message*, so a large message's process starts while its objects still download; counted
    from "Received", that start would look short and bias the median low."""
    launches = [from_receiving(m)[0] - costs.superexec_poll_s / 2 for m in messages if m.process_start_s is not None]
    if not launches:
        return {}
    return {"clientapp_start_s": Constant(max(0.0, statistics.median(launches)), _spread(launches), len(launches),
                                          "'Receiving' → the ClientApp process logs its start, minus the "
                                          "SuperExec's mean poll wait (median)")}


#: The constants the ClientApp's way to the app's code is linear in, fitted together.
APP_CODE_CONSTANTS = ("clientapp_other_s", "local_s_per_mib")


def app_code_rows(messages: Sequence[MeasuredMessage], costs: FlowerCosts) -> tuple[list[list[float]], list[float]]:
    """Least-squares rows for :data:`APP_CODE_CONSTANTS`: per message with a logged start, the terms'
    features (the work before the app's code, the local copy's MiB) against the measured "Receiving" → the
    app's code runs, less what the clock lays there that is not linear in them (the pull that waits for the
    download and Flower's backoff): both from :func:`fedbw.netmodel.flower.app_code_runs_s`, the expression
    the clock uses."""
    import dataclasses

    from fedbw.netmodel.flower import app_code_runs_s
    from fedbw.netmodel.terms import CLIENTAPP_WORK, LOCAL_COPY

    fixed = dataclasses.replace(costs, **dict.fromkeys(APP_CODE_CONSTANTS, 0.0))
    rows, targets = [], []
    for m in messages:
        if m.process_start_s is None:
            continue
        t_start, t_received, t_app = from_receiving(m)
        n, nbytes = max(1, m.objects_down), m.flower_bytes_down
        rows.append(CLIENTAPP_WORK.row() + LOCAL_COPY.row(nbytes=nbytes))
        targets.append(t_app - app_code_runs_s(fixed, t_start, t_received, n, nbytes))
    return rows, targets


def fit_app_code(messages: Sequence[MeasuredMessage], costs: FlowerCosts,
                 without: frozenset[str] = frozenset()) -> dict[str, Constant]:
    """:data:`APP_CODE_CONSTANTS` jointly (least squares ≥ 0) from the unshaped runs and the shaped ones (only
    there does a ClientApp wait for a download still arriving)."""
    rows, targets = app_code_rows(messages, costs)
    if not rows:
        return {}
    a, b = _without(np.array(rows), APP_CODE_CONSTANTS, without), np.array(targets)
    x = nonnegative_lstsq(a, b)
    residual = b - a @ x
    spread = float(np.percentile(np.abs(residual), 75))
    how = ("least squares (≥ 0) of 'Receiving' → the app's code runs, less the clock's pull after the download "
           f"(Flower's backoff, mean over its jitter), on the work before the app's code and the local copy's MiB "
           f"({len(b)} messages; spread = 75th percentile of |residual|)")
    return {k: Constant(float(v), spread, len(b), how) for k, v in zip(APP_CODE_CONSTANTS, x)}


def empty_pull_gaps(messages: Sequence[MeasuredMessage], costs: FlowerCosts) -> list[float]:
    """Each client's "Sent" → its next "Receiving", less the SuperNode's 3 s sleep, where the node's own
    grid found the next message (under a second left): one empty pull's round trip on loopback."""
    gaps = []
    by_client = sorted((m for m in messages if m.t_receiving_s and m.t_sent_s),
                       key=lambda m: (m.run, m.model, m.client_id, m.t_receiving_s or 0.0))
    for prev, nxt in zip(by_client, by_client[1:]):
        if (prev.run, prev.model, prev.client_id) == (nxt.run, nxt.model, nxt.client_id):
            gap = (nxt.t_receiving_s or 0.0) - (prev.t_sent_s or 0.0) - costs.supernode_idle_poll_s
            if 0 <= gap < 1.0:  # the node's own 3 s grid found the message (not a later grid point)
                gaps.append(gap)
    return gaps


def fit_request(messages: Sequence[MeasuredMessage], costs: FlowerCosts) -> dict[str, Constant]:
    """One empty pull's server work: the median of :func:`empty_pull_gaps`."""
    gaps = empty_pull_gaps(messages, costs)
    if not gaps:
        return {}
    return {"request_s": Constant(statistics.median(gaps), _spread(gaps), len(gaps),
                                  "'Sent' → next 'Receiving' beyond the SuperNode's 3 s sleep: one empty pull "
                                  "(median)")}


def fit_download_round_trips(shaped: Sequence[tuple[MeasuredMessage, Any]], costs: FlowerCosts,
                             array_shares: tuple[float, ...] = ()) -> dict[str, Constant]:
    """Round trips a download makes in series beyond the others the clock lays, from the shaped runs'
    (message, link) pairs: the median of (measured − the clock's download alone with none of them) ÷ the
    link's round trip, ≥ 0 (:func:`fedbw.netmodel.flower.download_alone_s`, the clock's own expression).

    The unshaped runs cannot show them (a round trip there costs nothing). The median keeps a download
    that met the ServerApp's push (Flower's pull backoff) from moving it.
    """
    import dataclasses

    from fedbw.netmodel.flower import download_alone_s, objects_alone_s

    none = dataclasses.replace(costs, download_round_trips=0.0)
    counts = []
    for m, link in shaped:
        n, nbytes = max(1, m.objects_down), m.flower_bytes_down
        if not nbytes or not m.t_down_s or link.rtt_s <= 0:
            continue
        model = download_alone_s(none, link.rtt_s, objects_alone_s(none, nbytes, n, link.down_bytes_per_s,
                                                                   link.rtt_s, 1.0, array_shares))
        counts.append((m.t_down_s - model) / link.rtt_s)
    if not counts:
        return {}
    runs = sorted({m.run for m, _ in shaped})
    return {"download_round_trips": Constant(
        max(0.0, statistics.median(counts)), _spread(counts), len(counts),
        f"{SHAPED_MODEL}, shaped runs {', '.join(runs)}: (measured − modelled download) ÷ the round trip, "
        "median, ≥ 0")}


def fit_app_setup(messages: Sequence[MeasuredMessage]) -> dict[str, Constant]:
    """fedbw's real-training apps in a fresh process: the app's set-up besides training."""
    other = [m.parts.get("app_other_s", 0.0) for m in messages]
    if not other:
        return {}
    return {"app_setup_s": Constant(statistics.median(other), _spread(other), len(other),
                                    f"app time besides training in a fresh ClientApp process, real training of "
                                    f"{REAL_MODEL} (median): importing torch, building the model")}


def fit_aggregation(samples: Sequence[Sequence[float]], without: frozenset[str] = frozenset()) -> dict[str, Constant]:
    """Flower's FedAvg aggregation as base + per-MiB cost, from (replies, MiB each, best seconds) samples."""
    if not samples:
        return {}
    rows = [AGGREGATION.row(reply_bytes=k * mib * MIB) for k, mib, _ in samples]
    times = [float(t) for *_, t in samples]
    a = _without(np.array(rows), AGGREGATION.constants, without)
    x = nonnegative_lstsq(a, np.array(times))
    residual = np.array(times) - a @ x
    spread = float(np.percentile(np.abs(residual), 75))
    how = "flwr.server.strategy.aggregate.aggregate of k ∈ {2, 4, 8} replies of {1, 16, 64} MiB, best of 3, fitted"
    return {k: Constant(float(v), spread, len(times), how) for k, v in zip(AGGREGATION.constants, x)}


def shaped_messages(messages: Sequence[MeasuredMessage]) -> list[tuple[MeasuredMessage, Any]]:
    """The shaped runs' messages (:data:`SHAPED_RUNS`), each with its run's link as the model sees it."""
    links = {label: r.link() for label, r in SHAPED_RUNS.items() if any(m.run == label for m in messages)}
    return [(m, links[m.run]) for m in messages if m.run in links]


def shaped_array_shares() -> tuple[float, ...]:
    """The shaped runs' model's array shares (its objects' sizes)."""
    from fedbw.catalog import get_model

    return tuple(get_model(SHAPED_MODEL).array_shares)


def costs_of(constants: dict[str, Constant]) -> FlowerCosts:
    """The model's costs with the constants fitted so far (Flower's intervals at their defaults)."""
    return FlowerCosts(**{k: c.value for k, c in constants.items()})


def fit_all(messages: Sequence[MeasuredMessage], aggregation: Sequence[Sequence[float]],
            without: frozenset[str] = frozenset()) -> dict[str, Constant]:
    """Every constant from a calibration's messages, in the module's order. ``without``: constants held at
    0, the others fitted as if those terms did not exist (what :mod:`.evaluate` compares against)."""
    by_run: dict[str, list[MeasuredMessage]] = {}
    for m in messages:
        by_run.setdefault(m.run, []).append(m)
    unshaped, shaped = by_run.get(UNSHAPED, []), shaped_messages(messages)
    constants: dict[str, Constant] = {}

    def add(fitted: dict[str, Constant]) -> None:
        constants.update({k: Constant(0.0, 0.0, 0, "held at 0") if k in without else c for k, c in fitted.items()})

    add(fit_hops(unshaped + by_run.get(PROBE, []), without))
    add(fit_start(unshaped, costs_of(constants)))
    add(fit_request(unshaped, costs_of(constants)))
    add(fit_app_code(unshaped + [m for m, _ in shaped], costs_of(constants), without))
    add(fit_download_round_trips(shaped, costs_of(constants), shaped_array_shares()))
    add(fit_app_setup(by_run.get(REAL, [])))
    add(fit_aggregation(aggregation, without))
    return constants
