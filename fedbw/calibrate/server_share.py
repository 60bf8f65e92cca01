"""``server_share``: the SuperLink's part of a hop's object CPU, fitted from clients moving objects together.

Every other hop constant comes from one client at a time, so it holds both ends' CPU of one transfer
(:mod:`fedbw.calibrate.measure`). Which part runs in the SuperLink, one process serving every client,
shows only when several clients move objects at once: their requests then queue for it
(:mod:`fedbw.netmodel.contention`). This step emulates the shaped ResNet-18 run once more with
:data:`TOGETHER_CLIENTS` clients, takes each transfer's measured overlap with the other clients' transfers
(from the SuperNodes' stamps) as its concurrency, and fits the share that makes the model's growth over
the one-client run's median match the measured one, per direction (least squares over a grid of shares in
[0, 1]: the model is not linear in it).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from fedbw.calibration.file import Constant
from fedbw.netmodel.contention import hop_cpu_factor
from fedbw.netmodel.flower import MIB, FlowerCosts
from fedbw.netmodel.objects import transfer_objects_s
from fedbw.netmodel.transfer import ClientLink

#: Clients of the concurrent run: enough that requests meet at the SuperLink, few enough for 2 cores
#: (the run is dilated by ``--dilation auto`` for this many).
TOGETHER_CLIENTS = 4
#: The grid the share is fitted on.
SHARE_STEPS = 200

Window = tuple[int, str, float, float]  #: client, direction, first byte, last byte (the emulation's clock)


def transfer_windows(messages: Sequence[dict[str, Any]]) -> list[Window | None]:
    """Each message's download and upload span from the SuperNode's stamps: a download from "Receiving"
    for its measured length, an upload its measured length before "Sent successfully" (None: a stamp is
    missing). Two entries per message, down then up."""
    out: list[Window | None] = []
    for m in messages:
        cid, rec, sent = int(m["client_id"]), m.get("t_receiving_s"), m.get("t_sent_s")
        out.append(None if rec is None else (cid, "down", float(rec), float(rec) + float(m["t_down_s"])))
        out.append(None if sent is None else (cid, "up", float(sent) - float(m["t_up_s"]), float(sent)))
    return out


def concurrency(windows: Sequence[Window | None]) -> list[float | None]:
    """1 + every other client's transfer in the same direction, each by the share of this one it overlaps."""
    out: list[float | None] = []
    for w in windows:
        if w is None or w[3] <= w[2]:
            out.append(None)
            continue
        cid, d, a, b = w
        n = 1.0
        for o in windows:
            if o is not None and o[0] != cid and o[1] == d:
                n += max(0.0, min(b, o[3]) - max(a, o[2])) / (b - a)
        out.append(n)
    return out


def fit_server_share(alone: Sequence[dict[str, Any]], together: Sequence[dict[str, Any]], costs: FlowerCosts,
                     link: ClientLink, array_shares: Sequence[float] = ()) -> dict[str, Constant]:
    """The share of the hop's object CPU that queues at the SuperLink (``costs``: the one-client fit).

    ``alone``: the shaped one-client run's messages; ``together``: the same run with several clients.
    Each together-transfer's growth over the one-client median of its direction is matched with the
    model's growth at its measured concurrency (:func:`concurrency`). Empty when no transfer overlapped.
    """
    base: dict[str, float] = {}
    for d in ("down", "up"):
        ts = [float(m[f"t_{d}_s"]) for m in alone if m.get(f"t_{d}_s")]
        if ts:
            base[d] = statistics.median(ts)
    rows: list[tuple[Callable[[float], float], float]] = []  # (model growth at a share, measured growth)
    windows = transfer_windows(together)
    for i, (w, n) in enumerate(zip(windows, concurrency(windows))):
        if w is None or n is None or n <= 1.0 or w[1] not in base:
            continue
        d, m = w[1], together[i // 2]  # two windows per message: down, then up
        rate = link.down_bytes_per_s if d == "down" else link.up_bytes_per_s

        def model(share: float, n: float = n, m: dict[str, Any] = m, d: str = d, rate: float = rate) -> float:
            def at(concurrency: float) -> float:
                k = hop_cpu_factor(share, concurrency)
                return transfer_objects_s(float(m[f"flower_bytes_{d}"]), int(m[f"objects_{d}"] or 1), rate,
                                          link.rtt_s, costs.object_workers, costs.hop_object_s * k,
                                          costs.hop_s_per_mib / MIB * k, array_shares)
            return at(n) - at(1.0)

        rows.append((model, float(m[f"t_{d}_s"]) - base[d]))
    if not rows:
        return {}
    grid = [i / SHARE_STEPS for i in range(SHARE_STEPS + 1)]
    share = min(grid, key=lambda s: sum((model(s) - meas) ** 2 for model, meas in rows))
    residuals = sorted(abs(model(share) - meas) for model, meas in rows)
    spread = residuals[min(len(residuals) - 1, int(0.75 * len(residuals)))]
    how = (f"the shaped run again with {TOGETHER_CLIENTS} clients: each transfer's growth over the one-client "
           "median against the model's at its measured overlap with the others (least squares on a grid in "
           f"[0, 1]; {len(rows)} transfers; spread = 75th percentile of |residual|, seconds)")
    return {"server_share": Constant(share, spread, len(rows), how)}
