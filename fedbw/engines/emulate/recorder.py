"""Round records of fedbw's own apps under emulate: the apps' event log joined with the links' measurements.

When a round's ``round_end`` event arrives, each of its messages is paired with the SuperNode span that
carried it (:func:`~fedbw.engines.emulate.attribution.match_messages`), split into link, compute and
framework time, and the round's records are appended at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fedbw.engines.base import Progress
from fedbw.engines.emulate.attribution import MessageTimes, match_messages, message_times, round_records
from fedbw.engines.emulate.federation import MessageMeasure
from fedbw.engines.emulate.host import HostSampler, StartReference, host_round_for, judge_messages
from fedbw.engines.measured import EventReader, RoundAssembler
from fedbw.results.measured_round import client_extras, mark_halted
from fedbw.plan import Plan
from fedbw.results.privacy_record import privacy_round_from_event
from fedbw.results.records import ClientRoundRecord, RecordWriter, RoundRecord

ENGINE = "emulate"


class RoundRecorder:
    """Tails the apps' event log; when a round ends, joins it with the links' measurements."""

    def __init__(self, plan: Plan, run_id: str, events_path: Path, writer: RecordWriter, progress: Progress,
                 dropped: Callable[[], Sequence[int]]) -> None:
        self.plan, self.run_id, self.writer, self.progress = plan, run_id, writer, progress
        self.reader, self.assembler = EventReader(events_path), RoundAssembler()
        self.dropped = dropped
        self.host: HostSampler | None = None  #: set by the emulation once it samples the host
        self.clients: list[ClientRoundRecord] = []
        self.rounds: list[RoundRecord] = []
        self.messages: list[tuple[int, MessageTimes]] = []  #: (round, times) of every finished round's messages
        self.profile_of = {c.client_id: c.profile for c in plan.clients}
        self.starts = StartReference()

    def on_tick(self, live: Any) -> None:
        """The emulation's tick (a :class:`~fedbw.engines.emulate.federation.Live`): records for rounds
        that ended since the last one."""
        self.host = live.host
        self.consume(live.measures)

    def consume(self, measures: Callable[[], list[MessageMeasure]]) -> None:
        per_round = self.plan.config.clients.per_round
        for ev in self.reader.read_new():
            rnd = self.assembler.add(ev)
            if ev.get("event") == "message":
                r = ev["round"]
                self.progress(r, min(self.assembler.get(r).clients_done(), per_round - 1), per_round)
            if rnd is None:
                continue
            # a message the SuperNode never logged (it was dropped first) has no measure: skipped
            times = [message_times(ev_msg, meas) for ev_msg, meas in match_messages(rnd.messages, measures())
                     if meas is not None]
            judge_messages(times, self.host, self.starts)
            clients, record = round_records(
                self.run_id, ENGINE, rnd.round, times, self.profile_of, rnd.clients or [], self.dropped(),
                late=rnd.late,
                host=host_round_for(self.host, rnd.clients or []),
                loss=rnd.loss, accuracy=rnd.accuracy, epsilon=rnd.epsilon, wall_time_s=rnd.wall_time_s,
                privacy=privacy_round_from_event(rnd.privacy))
            record.abandoned = record.replies < self.plan.config.round.min_replies
            mark_halted(record, rnd)
            extras = client_extras(rnd)
            for c in clients:
                if (e := extras.get(c.client_id)) is not None:
                    c.train_loss, c.num_examples = e["train_loss"], e["num_examples"]
            self.writer.write([*clients, record])
            self.clients += clients
            self.rounds.append(record)
            self.messages += [(rnd.round, t) for t in times]
            self.progress(rnd.round, per_round, per_round)

