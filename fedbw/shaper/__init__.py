"""Asyncio link shaper: per-client TCP links with rate, latency, jitter and a byte/time ledger.

Usable on its own (``fedbw shape``) in front of any TCP service, or from an engine: :class:`Shaper`
on a running event loop, :class:`ShaperThread` for synchronous code, :func:`run_shaper_blocking` for
a foreground process. See docs/shaper.md for the model, the ledger schema and measured accuracy.
"""

from fedbw.shaper.bucket import RateSchedule, TokenBucket
from fedbw.shaper.errors import ShaperError
from fedbw.shaper.ledger import ClientStats, ConnRecord, DirStats, Ledger
from fedbw.shaper.link import ClientRoute, LinkSpec
from fedbw.shaper.proxy import Shaper, probe_upstream
from fedbw.shaper.thread import ShaperThread, new_event_loop, run_shaper_blocking

__all__ = [
    "ClientRoute",
    "ClientStats",
    "ConnRecord",
    "DirStats",
    "Ledger",
    "LinkSpec",
    "RateSchedule",
    "Shaper",
    "ShaperError",
    "ShaperThread",
    "TokenBucket",
    "new_event_loop",
    "probe_upstream",
    "run_shaper_blocking",
]
