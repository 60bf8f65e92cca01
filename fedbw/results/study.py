"""What a study produces: one row per (variant, profile), and where its runs and files are."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedbw.config.study import Study


@dataclass
class StudyRow:
    """One variant on one profile. Per-round figures are steady-state means: rounds ≥ 2 when the run
    has them (stock SecAgg+ downloads a float64 model from round 2 on), else round 1."""

    variant: str
    profile: str
    rounds: int  #: rounds the variant ran
    steady_rounds: list[int]
    bytes_up_per_client: float
    bytes_down_per_client: float
    round1_time_s: float
    round_time_s: float
    comm_time_s: float
    compute_time_s: float
    comm_fraction: float
    bandwidth_bound: bool
    epsilon: float | None  #: after the last round
    accuracy: float | None  #: after the last round
    loss: float | None
    uplink_ratio: float | None = None  #: bytes up per client / the baseline variant's
    framework_time_s: float = 0.0  #: Flower's own time in the round (polls, process starts, server work)
    epsilon_delta: float | None = None  #: the δ ε is stated at
    epsilon_sampling: str | None = None  #: the sampling ε was accounted for: "fixed" | "poisson" | "none" (local)
    epsilon_adjacency: str | None = None  #: "replace-one" | "add/remove"
    secagg_clipped: int | None = None  #: values SecAgg+ clipped, summed over the run's rounds (None: not measured)
    secagg_wrapped: int | None = None  #: values of SecAgg+ sums that wrapped, summed over the rounds
    #: the framework time's parts (fedbw.flower_protocol.FRAMEWORK_PARTS, server work), steady-round means:
    #: where a variant's round differs from an emulate of it, these say which of Flower's costs differ
    framework_parts_s: dict[str, float] = field(default_factory=dict)
    #: the steady round's 10th and 90th percentile (each averaged over the steady rounds), under Flower's
    #: costs: the spread of its unknown poll phases and of the calibration's constants (None: links only)
    round_interval_s: tuple[float, float] | None = None
    kind: str = ""  #: the variant's name in the study file ("" in files from before grids: the variant)
    cell: dict[str, Any] = field(default_factory=dict)  #: the grid's settings of this run ({} without a grid)
    round_ratio: float | None = None  #: round time / the baseline variant's, same cell and profile
    #: per stage, the bytes (down, up) a sampled client exchanged, steady-round means: where SecAgg+'s
    #: expansion lands (its masked vectors) and what its key and share stages add ({} in earlier files)
    bytes_per_stage: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: the chance Flower completes the steady round (SecAgg+ with clients gone after the share exchange:
    #: its threshold rule on a shuffled ring, fedbw.privacy.secagg_dropouts); None: nobody is gone
    round_completes: float | None = None

    @property
    def variant_kind(self) -> str:
        return self.kind or self.variant


@dataclass
class StudyResult:
    study: Study
    study_dir: Path
    rows: list[StudyRow] = field(default_factory=list)
    run_dirs: dict[str, Path] = field(default_factory=dict)
    stopped_early: dict[str, str] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    started_utc: str = ""
    command: str | None = None
    #: the model's version and the calibration's fingerprint the rows were timed with (Plan.model_stamp)
    made_by: dict[str, str | None] = field(default_factory=dict)
