"""What a round policy (``[round]``) cost, as the run's tables say it: late replies and their uplink."""

from __future__ import annotations

from collections.abc import Sequence

from fedbw.report.format import fmt_bytes
from fedbw.results.records import RoundRecord


def used_cell(r: RoundRecord, late: bool) -> str:
    """A round's clients cell: updates used of clients sampled (and "abandoned") when the run had late
    replies, else the clients sampled."""
    if not late:
        return str(r.num_clients)
    return f"{r.replies}/{r.num_clients}" + (" abandoned" if r.abandoned else "")


def late_caption(rounds: Sequence[RoundRecord]) -> str:
    """What the round policy (``[round]``) cost: late replies and the uplink bytes they wasted."""
    late = sum(r.late_clients for r in rounds)
    measured = [r.wasted_bytes_up for r in rounds if r.late_clients and r.wasted_bytes_up is not None]
    with_late = sum(1 for r in rounds if r.late_clients)
    wasted = (f"wasted {fmt_bytes(sum(measured))} of uplink" if len(measured) == with_late
              else "their uplink not measured (emulate writes a round's records before late uploads end)")
    abandoned = sum(r.abandoned for r in rounds)
    return (f"used/sampled = updates the server used of the clients sampled; {late} late repl"
            f"{'y' if late == 1 else 'ies'} over {len(rounds)} rounds, {wasted}"
            + (f"; {abandoned} round(s) abandoned (fewer than round.min_replies)" if abandoned else ""))
