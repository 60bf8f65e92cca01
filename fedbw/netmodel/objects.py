"""One message's objects moved over one link the way Flower 1.42 moves them: a few workers, one request each.

Flower sends a message as a tree of objects (≤ 5 MiB array chunks, one object per array, a few records
and the message), one gRPC request per object, ``FLWR_PRIVATE_MAX_CONCURRENT_OBJ_PUSHES`` /
``…_PULLS`` (2) requests at a time (``push_object_contents_from_iterable`` and ``pull_objects`` in
``flwr/supercore/inflatable/inflatable_utils.py``). Each worker takes the next object, waits one round
trip and the CPU both ends spend on it (one interpreter each: the CPU is one queue, not one per worker),
and then has its body on the link, shared equally with the other worker's body. The link idles only
while every worker is between bodies, so a small object's round trip is hidden behind a large one's
bytes on a slow uplink and exposed on a fast downlink, as the shaper's byte series under ``fedbw
emulate`` show (docs/methodology.md, "Objects on the wire"; docs/fidelity.md checks the transfers).

Which objects a message holds comes from its arrays' sizes when the model is known (the catalog's
``array_params``), else from an even split of its bytes (:func:`object_layout`). At zero round trip
and an unbounded link the time is the CPU alone, the sum ``fedbw calibrate`` fits on loopback.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from fedbw.netmodel.link_rate import LinkRate
from fedbw.netmodel.payload import ARRAY_CHUNK_BYTES

#: Bytes of an object that carries no array data (an Array's header, a record, the message): small
#: beside any round trip's worth of bytes, so its exact size barely matters.
SMALL_OBJECT_BYTES = 200.0


def _chunks(nbytes: float) -> list[float]:
    """An array's ≤ 5 MiB chunks (at least one)."""
    n = max(1, math.ceil(nbytes / ARRAY_CHUNK_BYTES))
    return [nbytes / n] * n


@lru_cache(maxsize=4096)
def object_layout(nbytes: float, objects: int, array_shares: tuple[float, ...] = ()) -> tuple[float, ...]:
    """The sizes of a message's ``objects`` objects in the order Flower sends them (post-order: an array's
    chunks, then the array's own object; the records and the message last); they add up to ``nbytes``.

    ``array_shares`` are the model's arrays as fractions of its values, in the message's order. They are
    used when the message has room for them (one object per array and its chunks); otherwise (a message
    that is not the model: SecAgg+'s masked vector, a control message) the bytes are split evenly over
    ``(objects − 4) / 2`` arrays, or, if none fits, carried by one object.
    """
    if objects <= 0:
        return ()
    bulk: list[float | None] = []  # None: a small object; a float: that share of the bulk bytes
    if array_shares and len(array_shares) * 2 <= objects:
        for share in array_shares:
            bulk += [share] + [None]
    else:
        n = max(0, (objects - 4) // 2)
        bulk += [1.0 / n, None] * n if n else [1.0]
    bulk = bulk[:objects] + [None] * (objects - len(bulk))
    small = min(SMALL_OBJECT_BYTES, nbytes / objects)
    # an array's chunks are objects too: past the count, the last small objects give way
    body = nbytes - small * sum(b is None for b in bulk)
    extra = sum(len(_chunks(body * b)) - 1 for b in bulk if b is not None)
    while extra > 0 and bulk and bulk[-1] is None:
        bulk.pop()
        extra -= 1
    body = nbytes - small * sum(b is None for b in bulk)
    sizes: list[float] = []
    for b in bulk:
        sizes += [small] if b is None else _chunks(body * b)
    return tuple(sizes)


@lru_cache(maxsize=8192)
def pipelined_transfer_s(sizes: tuple[float, ...], bytes_per_s: float, rtt_s: float, workers: int,
                         cpu_per_object_s: float, cpu_per_byte_s: float) -> float:
    """Seconds to move objects of ``sizes`` (in order) with ``workers`` requests at a time.

    Each worker takes the next object, spends one round trip and the object's CPU (``cpu_per_object_s``
    + ``cpu_per_byte_s`` × its size, in one queue shared by all workers), then has its body on the link;
    bodies on the link share its rate equally. The transfer ends when the last body has arrived.
    """
    if bytes_per_s <= 0 and sizes:
        return math.inf
    return _pipelined(sizes, bytes_per_s, None, 0.0, rtt_s, workers, cpu_per_object_s, cpu_per_byte_s)


def _pipelined(sizes: Sequence[float], bytes_per_s: float, rate: LinkRate | None, t0_s: float, rtt_s: float,
               workers: int, cpu_per_object_s: float, cpu_per_byte_s: float) -> float:
    """:func:`pipelined_transfer_s`, on a link of ``bytes_per_s`` or, with ``rate``, on a traced link from
    clock time ``t0_s`` (its rate changes are events too). Seconds from the start."""
    if not sizes:
        return 0.0
    workers = max(1, workers)
    queue = iter(sizes)
    cpu_free = 0.0
    waiting: list[tuple[float, float]] = []  # (time its body may start, its bytes), one per idle worker
    bodies: list[float] = []  # bytes left of each body on the link
    t = 0.0

    def take(now: float) -> None:
        """A free worker takes the next object, if any: its round trip, then its turn on the CPU."""
        nonlocal cpu_free
        size = next(queue, None)
        if size is not None:
            cpu_free = max(cpu_free, now + rtt_s) + cpu_per_object_s + cpu_per_byte_s * size
            waiting.append((cpu_free, size))

    for _ in range(workers):
        take(0.0)
    while waiting or bodies:
        if rate is not None:  # a traced link: its rate now, and the next step is an event
            bytes_per_s = rate.rate_at(t0_s + t)
            t_change = rate.next_change(t0_s + t) - t0_s
        else:
            t_change = math.inf
        # the next event: a waiting body starts, the smallest body on the link finishes, or the rate steps
        t_start = min(w[0] for w in waiting) if waiting else math.inf
        smallest = min(bodies) if bodies else math.inf
        t_finish = t + smallest * len(bodies) / bytes_per_s if bodies and bytes_per_s > 0 else math.inf
        if t_finish <= min(t_start, t_change):  # every body moved the smallest one's bytes: done (no drift)
            bodies.remove(smallest)
            bodies = [b - smallest for b in bodies]
            t = max(t, t_finish)
            take(t)
            continue
        t_next = min(t_start, t_change)
        if bodies:
            moved = (t_next - t) * bytes_per_s / len(bodies)
            bodies = [b - moved for b in bodies]
        t = t_next
        for w in [w for w in waiting if w[0] <= t]:
            waiting.remove(w)
            if w[1] > 0:
                bodies.append(w[1])
            else:
                take(t)
    return t


def transfer_objects_s(nbytes: float, objects: int, bytes_per_s: float, rtt_s: float, workers: int,
                       cpu_per_object_s: float, cpu_per_byte_s: float,
                       array_shares: Sequence[float] = (), rate: LinkRate | None = None, t0_s: float = 0.0) -> float:
    """:func:`pipelined_transfer_s` of a message of ``nbytes`` in ``objects`` objects (:func:`object_layout`);
    with ``rate``, on that traced link from clock time ``t0_s`` (``bytes_per_s`` unused)."""
    sizes = object_layout(float(nbytes), int(objects), tuple(array_shares))
    if rate is not None:
        return _pipelined(sizes, 0.0, rate, float(t0_s), float(rtt_s), int(workers), float(cpu_per_object_s),
                          float(cpu_per_byte_s))
    return pipelined_transfer_s(sizes, float(bytes_per_s), float(rtt_s), int(workers),
                                float(cpu_per_object_s), float(cpu_per_byte_s))
