"""Flows that share one link (the server's NIC) on top of their own links: max-min fair, over time.

Every client's download leaves the server through the same uplink, every upload arrives through the same
downlink. Each flow is capped by its own client's link; together they share the server link max-min fairly
(water-filling: flows below their fair share keep their cap, the rest split what is left equally), as
competing TCP flows with similar RTTs do on average. Flows start at different times (each SuperNode pulls
when its poll comes round) and end at different times, so the shares change at every start and finish:
:func:`finish_times` steps through those events.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fedbw.netmodel.link_rate import LinkRate

#: Flows within this many bytes of done count as done (float round-off across many events).
_DONE_BYTES = 1e-6


@dataclass(frozen=True)
class Flow:
    """One transfer: when it starts, how many bytes, and its own cap (bytes per second; inf = none). With
    ``rate`` (a traced link: :class:`~fedbw.netmodel.link_rate.LinkRate`) the cap is the trace's rate at
    each moment instead, and ``cap_bytes_per_s`` is unused."""

    start_s: float
    size_bytes: float
    cap_bytes_per_s: float
    rate: LinkRate | None = None

    def cap_at(self, t_s: float) -> float:
        return self.cap_bytes_per_s if self.rate is None else self.rate.rate_at(t_s)


def water_fill(caps: Sequence[float], capacity: float, counts: Sequence[int] | None = None) -> list[float]:
    """Max-min fair rates for flows with ``caps`` sharing ``capacity`` (all in the same unit).

    Flows whose cap is below the fair share get their cap; the others share the rest equally. With
    ``capacity = inf`` every flow gets its cap. ``counts[i]`` identical flows stand behind ``caps[i]``
    (each gets the rate returned for it), so a million clients on a few links cost a few entries.
    Raises ValueError for a negative cap or capacity.
    """
    if capacity < 0 or any(c < 0 for c in caps):
        raise ValueError("capacities must be >= 0")
    if math.isinf(capacity):
        return [float(c) for c in caps]
    weights = [1] * len(caps) if counts is None else counts
    rates = [0.0] * len(caps)
    left = float(capacity)
    remaining = sum(weights)
    for i in sorted(range(len(caps)), key=lambda i: caps[i]):
        rates[i] = min(float(caps[i]), left / remaining)
        left -= rates[i] * weights[i]
        remaining -= weights[i]
    return rates


def finish_times(flows: Sequence[Flow], capacity_bytes_per_s: float, counts: Sequence[int] | None = None,
                 ) -> list[float]:
    """When each flow's last byte is through, with ``flows`` sharing ``capacity_bytes_per_s``.

    Between consecutive events (a flow starts or finishes) the rates are constant: the water-filling
    of the active flows' caps over the capacity. A zero-byte flow finishes when it starts; a flow with
    no rate at all (cap 0, or no capacity) never finishes (``inf``). ``counts[i]`` identical flows stand
    behind ``flows[i]`` (they start, move and finish together): the cost grows with the distinct flows,
    not with the clients.
    """
    # identical flows (the same start, size and cap) move together: lay each out once
    index: dict[Flow, int] = {}
    where: list[int] = []
    unique: list[Flow] = []
    weights: list[int] = []
    for f, k in zip(flows, [1] * len(flows) if counts is None else counts):
        j = index.get(f)
        if j is None:
            j = index[f] = len(unique)
            unique.append(f)
            weights.append(0)
        weights[j] += k
        where.append(j)
    flows, n = unique, len(unique)
    done: list[float | None] = [None] * n
    left = [float(f.size_bytes) for f in flows]
    for i, f in enumerate(flows):
        if f.size_bytes <= 0:
            done[i] = f.start_s
    pending = sorted((i for i in range(n) if done[i] is None), key=lambda i: flows[i].start_s)
    pending.reverse()  # the next flow to start is last: popped in O(1)
    active: list[int] = []
    t = flows[pending[-1]].start_s if pending else 0.0
    while pending or active:
        while pending and flows[pending[-1]].start_s <= t:
            active.append(pending.pop())
        if not active:
            t = flows[pending[-1]].start_s
            continue
        rates = water_fill([flows[i].cap_at(t) for i in active], capacity_bytes_per_s, [weights[i] for i in active])
        # time to the next event: the first active flow to finish, the next flow to start, or a traced
        # flow's next step (its cap changes there)
        to_finish = [0.0 if math.isinf(r) else (left[i] / r if r > 0 else math.inf) for i, r in zip(active, rates)]
        dt = min(to_finish)
        if pending:
            dt = min(dt, flows[pending[-1]].start_s - t)
        for i in active:
            if (rate := flows[i].rate) is not None:
                dt = min(dt, rate.next_change(t) - t)
        if math.isinf(dt):  # nothing moves and nothing else starts: the rest never finish
            for i in active:
                done[i] = math.inf
            break
        t += dt
        still = []
        for i, r in zip(active, rates):
            left[i] = 0.0 if math.isinf(r) else left[i] - r * dt
            if left[i] <= _DONE_BYTES * max(1.0, flows[i].size_bytes):
                done[i] = t
            else:
                still.append(i)
        active = still
    return [math.inf if (d := done[j]) is None else d for j in where]
