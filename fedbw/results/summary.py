"""Run summaries, so any runs — of any engines — can be put side by side.

Everything here comes from the records alone (no config, no catalog): what `fedbw compare`,
`fedbw report` and summary.json say about a run is what its records.jsonl holds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean

from fedbw.netmodel.timeline import BANDWIDTH_BOUND_FRACTION
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
    # the mean round's parts on its critical path (the client holding each stage's barrier)
    mean_download_s: float = 0.0
    mean_upload_s: float = 0.0
    mean_comm_s: float = 0.0
    mean_compute_s: float = 0.0
    mean_framework_s: float = 0.0
    mean_stage_times_s: dict[str, float] = field(default_factory=dict)  #: e.g. SecAgg+'s four stages
    mean_server_link_s: float | None = None  #: of the communication, waiting for the server's shared link
    bandwidth_bound: bool = False  #: mean comm share above 30 %
    profiles: list[str] = field(default_factory=list)
    #: mean bytes per live client and round, by stage: {stage: {"up": B, "down": B}}
    bytes_by_stage: dict[str, dict[str, float]] = field(default_factory=dict)
    #: (round, network-clock seconds elapsed at its end, accuracy) for every round that measured accuracy
    accuracy_curve: list[tuple[int, float, float]] = field(default_factory=list)
    mean_host_share: float | None = None  #: emulate: the host's mean share of a round
    #: estimate/simulate with Flower's costs: the rounds' 10th and 90th percentiles, each averaged over the
    #: rounds (the interval of the mean round's time, read beside ``mean_round_time_s``); None otherwise
    mean_round_interval_s: tuple[float, float] | None = None


def summarize(run_name: str, clients: list[ClientRoundRecord], rounds: list[RoundRecord]) -> RunSummary:
    live = [c for c in clients if not c.dropped]
    profile_times: dict[str, list[float]] = defaultdict(list)
    profile_up: dict[str, list[float]] = defaultdict(list)
    for c in live:
        profile_times[c.profile].append(c.t_total_s)
        profile_up[c.profile].append(c.t_up_s)
    in_order = sorted(rounds, key=lambda r: r.round)  # "final" is the last round, wherever its line is
    acc = [r.accuracy for r in in_order if r.accuracy is not None]
    eps = [r.epsilon for r in in_order if r.epsilon is not None]
    down, up = _critical_comm(live, rounds)
    hosted = [r.host.share for r in rounds if r.host is not None]
    comm_fraction = mean(r.comm_fraction for r in rounds) if rounds else 0.0
    server = [float(r.extra["server_link_s"]) for r in rounds if "server_link_s" in r.extra]
    return RunSummary(
        run=run_name,
        engine=rounds[0].engine if rounds else "?",
        rounds=len(rounds),
        mean_round_time_s=_mean(r.round_time_s for r in rounds),
        mean_comm_fraction=comm_fraction,
        mean_bytes_up_per_client=_mean(c.bytes_up for c in live),
        mean_bytes_down_per_client=_mean(c.bytes_down for c in live),
        final_accuracy=acc[-1] if acc else None,
        final_epsilon=eps[-1] if eps else None,
        per_profile_client_time_s={k: mean(v) for k, v in sorted(profile_times.items())},
        per_profile_up_s={k: mean(v) for k, v in sorted(profile_up.items())},
        epsilon_context=_epsilon_context(rounds),
        host_bound_rounds=[r.round for r in rounds if r.host_bound] if hosted else None,
        mean_download_s=down,
        mean_upload_s=up,
        mean_comm_s=_mean(r.comm_time_s for r in rounds),
        mean_compute_s=_mean(r.compute_time_s for r in rounds),
        mean_framework_s=_mean(r.framework_time_s for r in rounds),
        mean_stage_times_s=_mean_dict([r.stage_times_s for r in rounds]),
        mean_server_link_s=mean(server) if server else None,
        bandwidth_bound=comm_fraction > BANDWIDTH_BOUND_FRACTION,
        profiles=sorted(profile_times),
        bytes_by_stage=_bytes_by_stage(live),
        accuracy_curve=_accuracy_curve(rounds),
        mean_host_share=mean(hosted) if hosted else None,
        mean_round_interval_s=_mean_interval(rounds),
    )


def _mean_interval(rounds: list[RoundRecord]) -> tuple[float, float] | None:
    spans = [r.round_interval_s for r in rounds if r.round_interval_s is not None]
    if not spans or len(spans) != len(rounds):  # every round's, or none: a mean of some would mislead
        return None
    return mean(s[0] for s in spans), mean(s[1] for s in spans)


def _mean(values) -> float:
    values = list(values)
    return mean(values) if values else 0.0


def _mean_dict(dicts: list[dict[str, float]]) -> dict[str, float]:
    keys = list(dict.fromkeys(k for d in dicts for k in d))
    return {k: mean(d.get(k, 0.0) for d in dicts) for k in keys}


def _critical_comm(live: list[ClientRoundRecord], rounds: list[RoundRecord]) -> tuple[float, float]:
    """Mean download and upload time per round of the clients holding each stage's barrier (the slowest
    client of the stage): the communication a round waits for, split by direction."""
    by_round: dict[int, dict[str, tuple[float, float, float]]] = defaultdict(dict)
    for c in live:
        for s in c.stages:
            best = by_round[c.round].get(s.stage)
            if best is None or s.t_total_s > best[0]:
                by_round[c.round][s.stage] = (s.t_total_s, s.t_down_s, s.t_up_s)
    ids = [r.round for r in rounds if r.round in by_round]
    if not ids:
        return 0.0, 0.0
    return (mean(sum(v[1] for v in by_round[i].values()) for i in ids),
            mean(sum(v[2] for v in by_round[i].values()) for i in ids))


def _bytes_by_stage(live: list[ClientRoundRecord]) -> dict[str, dict[str, float]]:
    sums: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for c in live:
        for s in c.stages:
            sums[s.stage].append((s.bytes_up, s.bytes_down))
    return {k: {"up": mean(u for u, _ in v), "down": mean(d for _, d in v)} for k, v in sums.items()}


def _accuracy_curve(rounds: list[RoundRecord]) -> list[tuple[int, float, float]]:
    out, elapsed = [], 0.0
    for r in sorted(rounds, key=lambda r: r.round):
        elapsed += r.round_time_s
        if r.accuracy is not None:
            out.append((r.round, elapsed, r.accuracy))
    return out


def time_to_accuracy(summary: RunSummary, target: float) -> float | None:
    """Network-clock seconds until the first round whose accuracy reaches ``target`` (None: never)."""
    return next((t for _, t, a in summary.accuracy_curve if a >= target), None)


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

    from fedbw.files.atomic import write_json_atomic

    write_json_atomic(run_dir / "summary.json", asdict(summary) | extra, indent=2)  # never half a summary
