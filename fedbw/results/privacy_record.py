"""What privacy did in one round, recorded beside ε so that a table can say what the ε means."""

from __future__ import annotations

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass as validated


@validated(config=ConfigDict(extra="forbid"))
class PrivacyRound:
    """ε's context (sampling, adjacency, δ) and what SecAgg+ had to clip or would have wrapped."""

    delta: float | None = None
    sampling: str | None = None  #: "poisson" | "fixed" (the sampling the accountant accounted)
    adjacency: str | None = None  #: "add/remove" | "replace-one"
    cohort: int | None = None  #: clients whose updates were aggregated this round
    secagg_clipped: int | None = None
    secagg_wrapped: int | None = None
