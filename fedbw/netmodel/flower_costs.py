"""Flower's costs in a real deployment and the expressions for one message that the clock
(:mod:`fedbw.netmodel.flower`) and calibration's fit (:mod:`fedbw.calibrate.fit`) both use: Flower's
intervals, this machine's CPU constants (their terms in :mod:`fedbw.netmodel.terms`), Flower's pull backoff,
a ClientApp's way to the app's code, a transfer alone on its link. One home, so the two never drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from fedbw.flower_protocol import SUPEREXEC_TASK_POLL_S
from fedbw.netmodel.link_rate import LinkRate
from fedbw.netmodel.objects import transfer_objects_s
from fedbw.netmodel.secagg_cost import SecAggCostConstants
from fedbw.netmodel.terms import AGGREGATION, CLIENTAPP_WORK, DOWNLOAD_ROUND_TRIPS, HOP, LOCAL_COPY

MIB = 2**20
#: FlowerCosts fields that are Flower's own intervals and settings (read from its source, never fitted).
FLOWER_SETTINGS = frozenset({"supernode_idle_poll_s", "superexec_poll_s", "reply_poll_s", "serverapp_poll_s",
                             "backoff_first_s", "backoff_cap_s", "backoff_jitter", "object_workers",
                             "content_wait_s"})
#: Constants that are counts, not CPU seconds: a host's speed does not rescale them.
COUNTS = frozenset({"download_round_trips"})
#: Flower's backoff jitter, averaged over by a rank-1 lattice rule: path i's jitter at retry j of worker w is
#: the point ((i · g^(16w + j + 1)) mod P + ½) / P (P prime, g a generator), so every retry's jitters are
#: stratified and the retries of a path, and the workers, are not correlated.
JITTER_PATHS, _LATTICE_GENERATOR = 127, 3


@dataclass(frozen=True)
class FlowerCosts:
    """Flower 1.42's intervals and this machine's CPU costs of its Deployment Engine.

    Intervals are Flower's module constants (tests/netmodel/test_flower_constants.py reads them from the
    installed flwr). CPU costs are those of the calibration machine; ``client_cpu`` / ``server_cpu``
    arguments of :class:`DeploymentClock` scale them for faster or slower devices.
    """

    supernode_idle_poll_s: float = 3.0  #: SuperNode sleep after an empty pull
    superexec_poll_s: float = SUPEREXEC_TASK_POLL_S  #: SuperExec task poll (FLWR_SUPEREXEC_TASK_POLL_INTERVAL)
    reply_poll_s: float = 0.5  #: SuperNode waits for its ClientApp's reply
    serverapp_poll_s: float = 3.0  #: HttpGrid.send_and_receive between pulls
    backoff_first_s: float = 1.0  #: pull of an object not uploaded yet: 1, 2, 4 … s
    backoff_cap_s: float = 10.0
    backoff_jitter: float = 0.2  #: each backoff sleep is its delay × (1 ± up to this), uniformly
    object_workers: int = 2  #: concurrent object requests per hop
    #: SuperNode sending a reply: sleep while an object the ClientApp has not stored yet is next
    content_wait_s: float = 0.5
    # CPU costs (seconds), measured by `fedbw calibrate` on the calibration machine
    request_s: float = 0.012  #: one request's server-side work (an empty pull, a confirm)
    hop_object_s: float = 0.002  #: per object per hop: one POST's own work
    hop_s_per_mib: float = 0.02  #: per MiB per hop: (de)serialise, sha256 on every store, copy
    clientapp_start_s: float = 1.4  #: a flwr-clientapp process: Python, Flower and the app's imports
    clientapp_other_s: float = 0.35  #: ClientApp work before the app's code: runtime pull, FAB install, load
    #: per MiB moved between processes of one machine (ClientApp ↔ SuperNode, the ServerApp's push)
    local_s_per_mib: float = 0.005
    app_setup_s: float = 0.0  #: fedbw's real-training apps per fresh process: import torch, build the model
    #: round trips a download makes in series besides the message's pull, its confirm and its objects
    #: (requests before the first object and after the last), fitted from a shaped run
    download_round_trips: float = 0.0
    aggregate_s_per_mib: float = 0.004  #: ... per MiB of replies aggregated
    #: SecAgg+'s crypto per primitive (keys, shares, masks), for the stages' client and server work
    secagg: SecAggCostConstants | None = None
    #: the fitted constants' 5th–95th percentile intervals (name, low, high) from their calibration's
    #: bootstrap: the clock's spread lanes draw constants from them (:mod:`fedbw.netmodel.spread`)
    intervals: tuple[tuple[str, float, float], ...] = ()

    def hop_cpu_s(self, objects: int, nbytes: float) -> float:
        """CPU time of moving one message of ``objects`` objects over one hop (both ends): the hop term."""
        return HOP.seconds(self, objects=objects, nbytes=nbytes)

    def local_cpu_s(self, nbytes: float) -> float:
        """CPU time of moving ``nbytes`` between two processes of one machine: the local-copy term."""
        return LOCAL_COPY.seconds(self, nbytes=nbytes)

    def serverapp_pull_s(self, objects: int, nbytes: float) -> float:
        """The ServerApp's pull of one stored reply from the SuperLink: one ``PullObject`` request per object
        (``HttpGrid.pull_messages`` → ``pull_objects``), both ends on the server — a hop over loopback, the
        hop term. (It was the local-copy term, per MiB alone, until validation 4's replies of ~600 objects
        waited 2 to 12 s longer in the ServerApp's poll than that charged: docs/fidelity.md.)"""
        return self.hop_cpu_s(objects, nbytes)

    def aggregate_s(self, reply_bytes: float) -> float:
        """The server's work between stages over ``reply_bytes`` of replies: the aggregation term."""
        return AGGREGATION.seconds(self, reply_bytes=reply_bytes)


#: Constants an older plan file may carry that the model no longer has (why: fedbw.calibration.file.RETIRED).
RETIRED_FIELDS = frozenset({"node_download_share"})


def costs_from_json(data: Mapping[str, object]) -> FlowerCosts:
    """FlowerCosts from ``dataclasses.asdict`` of one (the plan file carries them so); retired constants
    of an older file are left out."""
    d = {k: v for k, v in data.items() if k not in RETIRED_FIELDS}
    crypto = d.pop("secagg", None)
    intervals = tuple((str(k), float(lo), float(hi)) for k, lo, hi in d.pop("intervals", ()))  # type: ignore[attr-defined]
    return FlowerCosts(**d, secagg=None if crypto is None else SecAggCostConstants.from_json(crypto),  # type: ignore[arg-type]
                       intervals=intervals)


def backoff_until(t_attempt_s: float, t_available_s: float, costs: FlowerCosts) -> float:
    """When a pull that first failed at ``t_attempt_s`` gets objects that arrive at ``t_available_s``:
    the first retry point at or after their arrival (retries after 1, 2, 4, … s, capped)."""
    if t_available_s <= t_attempt_s:
        return t_attempt_s
    t, delay = t_attempt_s, costs.backoff_first_s
    while t < t_available_s:
        t += delay
        delay = min(2 * delay, costs.backoff_cap_s)
    return t


def pull_behind(t_start_s: float, t_first_s: float, t_all_s: float, objects: int, costs: FlowerCosts) -> float:
    """When a pull that starts at ``t_start_s`` has every object of a message that is still arriving.

    The objects become available one after another between ``t_first_s`` and ``t_all_s`` (the root,
    last, at ``t_all_s``), in the order Flower pulls them (post-order, as they were pushed);
    ``object_workers`` workers each take the next object and, while it is not there yet, retry after
    1, 2, 4 … s counted from their first try of that object (Flower's ``pull_objects``).
    """
    if t_all_s <= t_start_s:
        return t_start_s
    n = max(1, objects)
    free = [t_start_s] * max(1, costs.object_workers)
    done = t_start_s
    span = t_all_s - t_first_s
    # the objects already there when the pull starts take no wait: they change no worker's time
    start = min(n - 1, max(0, math.floor((t_start_s - t_first_s) * n / span))) if span > 0 else 0
    first, cap = costs.backoff_first_s, costs.backoff_cap_s
    for i in range(start, n):
        avail = t_all_s if i == n - 1 else t_first_s + span * (i + 1) / n
        t = min(free)
        w = free.index(t)
        if avail > t:  # Flower's backoff (backoff_until), inlined: this runs once per object
            delay = first
            while t < avail:
                t += delay
                delay = min(2 * delay, cap)
            free[w] = t
        if t > done:
            done = t
    return done


def pull_stored_at(t_start_s: float, t_stored_s: float, objects: int, costs: FlowerCosts) -> float:
    """When a pull that starts at ``t_start_s`` has a message whose objects are all stored at ``t_stored_s``:
    the mean over Flower's backoff jitter.

    A ClientApp pulls its message from its SuperNode, and in Flower 1.42 the SuperNode stores a message's
    objects only once it has pulled them all (``start_client_internal``: ``pull_objects``, then
    ``object_store.put`` for each): nothing is there before. Each of ``object_workers`` workers tries its
    first object at once and, while it is missing, sleeps 1, 2, 4 … s (capped), each sleep × (1 ± 20 %)
    (``pull_objects``' jitter); the pull is done at the last worker's first try after ``t_stored_s`` (the
    first worker to get its object takes the rest at once). The mean over :data:`JITTER_PATHS` lattice
    paths moves smoothly with the download instead of jumping a whole backoff at each retry point.
    """
    if t_stored_s <= t_start_s:
        return t_start_s
    workers = max(1, min(costs.object_workers, objects))
    return t_start_s + _mean_backoff_wait(round(t_stored_s - t_start_s, 4), workers, costs.backoff_first_s,
                                          costs.backoff_cap_s, costs.backoff_jitter)


@lru_cache(maxsize=4096)
def _mean_backoff_wait(wait_s: float, workers: int, first_s: float, cap_s: float, jitter: float) -> float:
    """The mean over the lattice paths of the later of ``workers`` workers' first retry at or after
    ``wait_s`` (cached: the clock's lanes meet the same waits round after round)."""
    paths, g = JITTER_PATHS, _LATTICE_GENERATOR
    total = 0.0
    for i in range(paths):
        done = 0.0
        for w in range(workers):
            t, delay, step = 0.0, first_s, 0
            while t < wait_s:
                u = ((i * pow(g, 16 * w + step + 1, paths)) % paths + 0.5) / paths
                t += delay * (1.0 + jitter * (2.0 * u - 1.0))
                delay = min(2 * delay, cap_s)
                step += 1
            done = max(done, t)
        total += done
    return total / paths


def app_code_runs_s(c: FlowerCosts, t_running_s: float, t_received_s: float, objects: int, nbytes: float,
                    speed: float = 1.0) -> float:
    """When a ClientApp whose process runs from ``t_running_s`` gets to the app's code: its pull of the
    message, whose objects its SuperNode stores at ``t_received_s`` (:func:`pull_stored_at`), the local
    copy, then the work before the app's code. The clock lays every ClientApp with it and
    ``fedbw calibrate`` fits with it: one expression."""
    t_has = pull_stored_at(t_running_s, t_received_s, objects, c) + c.local_cpu_s(nbytes) / speed
    return t_has + CLIENTAPP_WORK.seconds(c) / speed


def objects_alone_s(c: FlowerCosts, nbytes: float, objects: int, bytes_per_s: float, rtt_s: float,
                    speed: float = 1.0, array_shares: Sequence[float] = (), rate: LinkRate | None = None,
                    t0_s: float = 0.0) -> float:
    """A message's objects over one link of their own, ``object_workers`` requests at a time, each a round
    trip and the hop term's per-object and per-MiB work (:mod:`fedbw.netmodel.objects`); on a traced link
    (``rate``) from clock time ``t0_s``."""
    return transfer_objects_s(nbytes, objects, bytes_per_s, rtt_s, c.object_workers, c.hop_object_s / speed,
                              c.hop_s_per_mib / MIB / speed, array_shares, rate, t0_s)


def download_alone_s(c: FlowerCosts, rtt_s: float, objects_s: float, speed: float = 1.0) -> float:
    """A download alone on its link: the pull's round trip, the message's hop work, the confirm's round trip
    and ``download_round_trips`` more in series, then its objects (``objects_s``). The clock lays every
    download with it and ``fedbw calibrate`` fits ``download_round_trips`` with it."""
    return 2.0 * rtt_s + DOWNLOAD_ROUND_TRIPS.seconds(c, rtt_s=rtt_s) + objects_s
