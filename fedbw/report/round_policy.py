"""What a round policy (``[round]``) and clients that come and go cost, as the run's tables say it: late
replies and their uplink, dropped clients, abandoned rounds."""

from __future__ import annotations

from collections.abc import Sequence

from fedbw.report.format import fmt_bytes
from fedbw.results.records import RoundRecord


def shows_used(rounds: Sequence[RoundRecord]) -> bool:
    """Whether a run's tables show updates used of clients sampled: some reply was late or some client
    dropped, so the two differ."""
    return any(r.late_clients or r.dropped_clients for r in rounds)


def used_cell(r: RoundRecord, late: bool) -> str:
    """A round's clients cell: updates used of clients sampled (and "abandoned") when the run had late
    replies or dropped clients (:func:`shows_used`), else the clients sampled."""
    if not late:
        return str(r.num_clients)
    return f"{r.replies}/{r.num_clients}" + (" abandoned" if r.abandoned else "")


def late_caption(rounds: Sequence[RoundRecord]) -> str:
    """What the round policy (``[round]``) cost: late replies and the uplink bytes they wasted; clients
    that dropped (went off line before their reply)."""
    late = sum(r.late_clients for r in rounds)
    dropped = sum(r.dropped_clients for r in rounds)
    gone = f"{dropped} client(s) dropped (off line before replying)" if dropped else ""
    if not late:
        return (f"used/sampled = updates the server used of the clients sampled; {gone} over {len(rounds)} rounds"
                + abandoned_note(rounds))
    measured = [r.wasted_bytes_up for r in rounds if r.late_clients and r.wasted_bytes_up is not None]
    with_late = sum(1 for r in rounds if r.late_clients)
    wasted = (f"wasted {fmt_bytes(sum(measured))} of uplink" if len(measured) == with_late
              else "their uplink not measured (emulate writes a round's records before late uploads end)")
    return (f"used/sampled = updates the server used of the clients sampled; {late} late repl"
            f"{'y' if late == 1 else 'ies'} over {len(rounds)} rounds, {wasted}" + (f"; {gone}" if gone else "")
            + abandoned_note(rounds))


def abandoned_note(rounds: Sequence[RoundRecord]) -> str:
    """"; N round(s) abandoned (why)" — fewer replies than ``round.min_replies`` by the close, or a SecAgg+
    round Flower halted — or "" when none was."""
    abandoned = sum(r.abandoned for r in rounds)
    if not abandoned:
        return ""
    halted = sum("secagg_halted" in r.extra for r in rounds if r.abandoned)
    return f"; {abandoned} round(s) abandoned ({abandoned_why(abandoned, halted)}: the server kept its model)"


def abandoned_why(abandoned: int, halted: int) -> str:
    """Why ``abandoned`` rounds used no update, ``halted`` of them because SecAgg+ halted them."""
    return ("fewer than round.min_replies" if not halted else "SecAgg+ halted" if halted == abandoned
            else f"{halted} SecAgg+ halted, the rest fewer than round.min_replies")


def availability_caption(rounds: Sequence[RoundRecord]) -> str | None:
    """How many clients were on line at the rounds' starts (``clients.availability``); None without it."""
    online = [r.extra["online_clients"] for r in rounds if "online_clients" in r.extra]
    if not online:
        return None
    span = f"{min(online)}" if min(online) == max(online) else f"{min(online)}–{max(online)}"
    return f"clients on line at a round's start: {span} (clients.availability; a round samples only them)"
