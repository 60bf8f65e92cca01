"""What the emulating host did to one round: time the host, not the links, held the critical path.

Only emulate has a host between the model and the measurement. A round is *host-bound* when the
host's share of it reaches :data:`HOST_BOUND_SHARE`: then its figures describe this machine's CPUs
more than the links, and dilation (``emulate --dilation``) is the remedy. Time lost to the host is
counted on the critical path of each stage: the link idle while a message was still incomplete (the
sender's process had not handed over its bytes) plus a ClientApp start that took longer than
Flower's worst-case task poll plus the fastest start that device showed in the run. The idle time in
which the next request was crossing the link the other way is the link's own and nobody's hold. Where
devices are capped, the idle time's share that the device's own CPU held (its CPU use over the payload, as a
share of its cap) is the device's (``device_bound_s``), and of the rest the share the server's CPU held is
the server's (``server_bound_s``): a real deployment of those speeds pays them too, so they are kept out of
the host's share (fedbw.engines.emulate.host).
"""

from __future__ import annotations

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass as validated

#: A round whose host-lost time reaches this share of its round time is flagged host-bound.
HOST_BOUND_SHARE = 0.05


@validated(config=ConfigDict(extra="forbid"))
class HostRound:
    """The host's share of one emulated round, and how busy its CPUs were."""

    lost_s: float  #: critical-path time lost to the host (emulated seconds)
    share: float  #: lost_s / round time
    cpu_busy: float | None = None  #: the host's CPUs busy during the round, 0..1 of all cores
    #: Share of the round in sampling intervals with every core busy: the most the host can have starved anything
    cpu_saturated: float | None = None
    dilation: float = 1.0  #: every emulated second lasted this many real seconds
    cpu_capped: bool = False  #: each device's processes were capped to its share of a core
    device_cpu_s: float | None = None  #: CPU seconds the sampled devices' processes used (emulated)
    device_throttled_s: float | None = None  #: time devices waited on their cap: they were CPU-bound themselves
    #: Critical-path link idle that the devices' own CPU held (emulated seconds): not in ``lost_s``
    device_bound_s: float | None = None
    #: ... and that the server's own CPU held (its group's cap: a server of SERVER_CORES): not in ``lost_s``
    server_bound_s: float | None = None

    @property
    def bound(self) -> bool:
        return self.share >= HOST_BOUND_SHARE
