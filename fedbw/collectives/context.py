"""What a job running inside a rank knows about its rank (shared by the worker and the jobs it runs)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fedbw.collectives.launch import PROGRESS_LINE


@dataclass(frozen=True)
class RankContext:
    rank: int
    world: int
    backend: str
    device: Any  #: torch.device
    spec: dict[str, Any]

    def progress(self, payload: dict[str, Any]) -> None:
        """A progress line for the parent (rank 0 only: one line per event, not one per rank)."""
        if self.rank == 0:
            print(PROGRESS_LINE, json.dumps(payload), flush=True)
