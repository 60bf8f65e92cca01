"""The deployment a round runs in: Flower's own costs, how they are calibrated, and the server's link.

``framework = "flower-deployment"`` (top level, the default) makes estimate and simulate add Flower's
costs to every round — poll waits, a ClientApp process per message, serialisation, one request per
object, the ServerApp's poll, aggregation (docs/methodology.md); ``"none"`` keeps the links alone.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fedbw.config.sections import Section

Framework = Literal["flower-deployment", "none"]


class DeploymentConfig(Section):
    calibration: str | None = Field(
        None, description="calibration file written by `fedbw calibrate` (TOML); default: the catalog's, "
                          "measured on the machine docs/catalog.md names")
    poll_phase: Literal["averaged", "expected", "sampled"] = Field(
        "averaged", description="phases nobody knows (a SuperNode idle since it started, the SuperExec's poll): "
                                "\"averaged\" = the mean round over them (8 lanes of the clock, one per "
                                "quantile); \"expected\" = one round laid out at their mean; \"sampled\" = "
                                "draws from the run's seed (one possible run)")


class ServerConfig(Section):
    link: str = Field("server-10g", description="the server's own link, shared max-min fairly by every "
                                               "client's flows (`fedbw profiles`); \"none\": no limit")
