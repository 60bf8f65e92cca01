"""Pure network arithmetic: link transfers, data-center collectives, federated round timelines.

No I/O, no Flower, no torch. `estimate` uses it directly and `simulate` drives its virtual clock
with it, so the two can only disagree where the measured bytes or compute differ.
"""

from fedbw.netmodel.collectives import (
    AllReduceEstimate,
    allreduce,
    best_allreduce,
    busbw_from_algbw,
    hierarchical_allreduce,
)
from fedbw.netmodel.payload import MessageSizes, round_exchanges
from fedbw.netmodel.timeline import ClientLink, ClientStageTiming, Exchange, RoundTimeline, round_timeline
from fedbw.netmodel.transfer import transfer_time_s

__all__ = [
    "AllReduceEstimate", "allreduce", "best_allreduce", "busbw_from_algbw", "hierarchical_allreduce",
    "MessageSizes", "round_exchanges",
    "ClientLink", "ClientStageTiming", "Exchange", "RoundTimeline", "round_timeline",
    "transfer_time_s",
]
