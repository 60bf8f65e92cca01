"""What privacy did in one round, recorded beside ε so that a table can say what the ε means.

An ε means nothing without its sampling, its adjacency and its δ: a replace-one ε from a fixed-size
sample, an add/remove ε from Poisson sampling and a local per-client ε are different promises. Every
RoundRecord of a DP or SecAgg+ run carries one of these; the estimate engine fills it from the cohort its
model has the server aggregate (:func:`fedbw.privacy.rounds.privacy_round`), simulate and emulate from the ServerApp's
``round_end`` event (:func:`fedbw.results.privacy_record.privacy_round_from_event`), where the cohort and
SecAgg+'s counts are measured. Its home is here, beside the accounting that fills it; the records
(:mod:`fedbw.results.records`) carry it.
"""

from __future__ import annotations

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass as validated


@validated(config=ConfigDict(extra="forbid"))
class PrivacyRound:
    """ε's context (sampling, adjacency, δ) and what SecAgg+ had to clip or would have wrapped."""

    delta: float | None = None
    sampling: str | None = None  #: "poisson" | "fixed" (central: the sampling accounted) | "none" (local DP)
    adjacency: str | None = None  #: "add/remove" | "replace-one"
    cohort: int | None = None  #: clients whose updates were aggregated this round
    secagg_clipped: int | None = None  #: values SecAgg+'s quantizer clipped (+ weights clipped to max_weight)
    secagg_wrapped: int | None = None  #: values of the masked sum that wrapped (or may have) mod the modulus
    noise_multiplier: float | None = None  #: noise std / sensitivity this round was accounted with
