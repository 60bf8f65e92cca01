"""Pure network arithmetic: link transfers, shared links, Flower's deployment costs, federated round
timelines, data-center collectives.

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
from fedbw.flower_protocol import FRAMEWORK_PARTS
from fedbw.netmodel.flower import DeploymentClock, FlowerCosts
from fedbw.netmodel.payload import MessageSizes, round_exchanges
from fedbw.netmodel.timeline import ClientStageTiming, RoundTimeline, ServerLink, round_timeline
from fedbw.netmodel.transfer import ClientLink, transfer_time_s

__all__ = [
    "AllReduceEstimate", "allreduce", "best_allreduce", "busbw_from_algbw", "hierarchical_allreduce",
    "FRAMEWORK_PARTS", "DeploymentClock", "FlowerCosts",
    "MessageSizes", "round_exchanges",
    "ClientLink", "ClientStageTiming", "RoundTimeline", "ServerLink", "round_timeline",
    "transfer_time_s",
]
