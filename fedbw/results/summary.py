"""Run summaries, so any runs — of any engines — can be put side by side."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from statistics import mean

from fedbw.results.records import ClientRoundRecord, RoundRecord, load_records


@dataclass(frozen=True)
class RunSummary:
    run: str
    engine: str
    rounds: int
    mean_round_time_s: float
    mean_comm_fraction: float
    mean_bytes_up_per_client: float
    mean_bytes_down_per_client: float
    final_accuracy: float | None
    final_epsilon: float | None
    per_profile_client_time_s: dict[str, float]
    per_profile_up_s: dict[str, float]
    #: what final_epsilon means: its sampling, adjacency and δ (None without DP)
    epsilon_context: dict[str, object] | None = None
    host_bound_rounds: list[int] | None = None  #: emulate: rounds the host, not the links, held


def summarize(run_name: str, clients: list[ClientRoundRecord], rounds: list[RoundRecord]) -> RunSummary:
    live = [c for c in clients if not c.dropped]
    profile_times: dict[str, list[float]] = defaultdict(list)
    profile_up: dict[str, list[float]] = defaultdict(list)
    for c in live:
        profile_times[c.profile].append(c.t_total_s)
        profile_up[c.profile].append(c.t_up_s)
    acc = [r.accuracy for r in rounds if r.accuracy is not None]
    eps = [r.epsilon for r in rounds if r.epsilon is not None]
    return RunSummary(
        run=run_name,
        engine=rounds[0].engine if rounds else "?",
        rounds=len(rounds),
        mean_round_time_s=mean(r.round_time_s for r in rounds) if rounds else 0.0,
        mean_comm_fraction=mean(r.comm_fraction for r in rounds) if rounds else 0.0,
        mean_bytes_up_per_client=mean(c.bytes_up for c in live) if live else 0.0,
        mean_bytes_down_per_client=mean(c.bytes_down for c in live) if live else 0.0,
        final_accuracy=acc[-1] if acc else None,
        final_epsilon=eps[-1] if eps else None,
        per_profile_client_time_s={k: mean(v) for k, v in sorted(profile_times.items())},
        per_profile_up_s={k: mean(v) for k, v in sorted(profile_up.items())},
        epsilon_context=_epsilon_context(rounds),
        host_bound_rounds=[r.round for r in rounds if r.host_bound] if any(r.host for r in rounds) else None,
    )


def _epsilon_context(rounds: list[RoundRecord]) -> dict[str, object] | None:
    last = next((r for r in reversed(rounds) if r.epsilon is not None and r.privacy is not None), None)
    if last is None or last.privacy is None:
        return None
    p = last.privacy
    return {"sampling": p.sampling, "adjacency": p.adjacency, "delta": p.delta}


def summarize_run_dir(run_dir: Path) -> RunSummary:
    clients, rounds = load_records(run_dir)
    name = Path(run_dir).name if Path(run_dir).is_dir() else Path(run_dir).parent.name
    return summarize(name, clients, rounds)


def write_summary_json(run_dir: Path, summary: RunSummary, **extra: object) -> None:
    from dataclasses import asdict

    (run_dir / "summary.json").write_text(json.dumps(asdict(summary) | extra, indent=2) + "\n")
