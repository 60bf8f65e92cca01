"""Where each emulated message's time went: link, compute, or Flower itself.

For fedbw's own apps every message has three views on one clock (``perf_counter`` = CLOCK_MONOTONIC,
shared by all processes of the machine):

* the ServerApp's event (fedbw.fl.measure): ``t_sent`` (pushed to the SuperLink), ``t_replied``
  (reply pulled), the ClientApp's ``t_recv``/``t_reply`` and its measured ``compute_s``;
* the SuperNode's stamped log: receiving, received, sending, sent;
* the shaper's byte series: first byte in and last byte out of the download and of the upload.

From them one message splits into consecutive parts (docs/emulate.md):

==========================  =========================================================
supernode_poll_s            t_sent → first downlink byte (SuperNode polls every 3 s)
t_down_s                    the download on the shaped link (headers, round trips included)
clientapp_start_s           all objects received → ClientApp running (SuperExec poll, process start)
app_other_s                 ClientApp time that is not training (mods, SecAgg+ crypto, (de)serialising)
t_compute_s                 training, as the ClientApp measured it
reply_pickup_s              ClientApp done → SuperNode starts the upload (0.5 s poll, process exit)
t_up_s                      the upload on the shaped link
serverapp_poll_s            last uplink byte → ServerApp has the reply (ServerApp polls every 3 s)
==========================  =========================================================

Everything but the link and compute is framework time: ``t_framework_s`` of a stage.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fedbw.engines.emulate.host import MessageHold
from fedbw.flower_protocol import FRAMEWORK_PARTS
from fedbw.results.host_record import HostRound
from fedbw.results.records import ClientRoundRecord, RoundRecord, StageRecord

#: Makes a round's host record from its critical path's hold (the host's and the devices' own), round time and window.
HostFactory = Callable[[MessageHold, float, float, float], HostRound]


@dataclass
class MessageTimes:
    """One client's share of one stage, split into consecutive parts (seconds)."""

    client_id: int
    stage: str
    bytes_down: float  #: on the wire (shaper ledger)
    bytes_up: float
    flower_bytes_down: float  #: Flower's message size (what simulate lays on its clock)
    flower_bytes_up: float
    t_start_s: float  #: the ServerApp pushed the message
    t_end_s: float  #: the ServerApp pulled the reply
    t_down_s: float
    t_compute_s: float
    t_up_s: float
    parts: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    bulk: dict[str, Any] = field(default_factory=dict)  #: payload-only transfers, for the agreement check
    objects_down: int = 0  #: Flower's objects in the message and the reply (from the apps' events)
    objects_up: int = 0
    process_start_s: float | None = None  #: "Received" → the ClientApp process logged its start
    launch_s: float | None = None  #: "Receiving" → the ClientApp process logged its start
    t_receiving_s: float | None = None  #: the SuperNode's "Receiving" and "Sent successfully" (perf_counter)
    t_sent_s: float | None = None
    t_host_s: float | None = None  #: time the host, not the link, held (fedbw.engines.emulate.host)
    t_device_s: float | None = None  #: link idle the device's own CPU held (not the host's: fedbw.engines.emulate.host)
    t_server_s: float | None = None  #: link idle the server's own CPU held (likewise)
    #: How long the download had been under way when the ServerApp finished pushing the message's objects
    #: (0: it started after; None: not logged). A SuperNode whose poll lands inside the push finds the
    #: message before its objects and waits on Flower's pull backoff inside its download.
    down_before_pushed_s: float | None = None
    #: The ServerApp's own work, timed by it (fedbw.fl.measure; None where the event predates the stamps): its
    #: push of the stage's batch (every message's objects onto the SuperLink) and the pull that brought this
    #: reply, each with how many messages it moved (its time is theirs together)
    t_serverapp_push_s: float | None = None
    serverapp_pushed_with: int | None = None
    t_serverapp_pull_s: float | None = None
    serverapp_pulled_with: int | None = None

    @property
    def total_s(self) -> float:
        return self.t_end_s - self.t_start_s

    @property
    def t_framework_s(self) -> float:
        return max(0.0, self.total_s - self.t_down_s - self.t_compute_s - self.t_up_s)


def _or(v: float | None, default: float) -> float:
    return default if v is None else v


def message_times(event: Mapping[str, Any], measure: Any) -> MessageTimes:
    """Combine one ``message`` event with the :class:`~fedbw.engines.emulate.MessageMeasure` it matches."""
    span, down, up = measure.span, measure.down, measure.up
    t_sent, t_replied = float(event["t_sent"]), float(event["t_replied"])
    compute = float(event.get("compute_s") or 0.0)
    if event.get("t_app_s") is not None:
        # Synthetic compute is reported, not spent: on the wall clock it cannot exceed the app's time.
        compute = min(compute, float(event["t_app_s"]))
    down_first = _or(down.first_in_s, span.t_receiving_s)
    down_last = _or(down.last_out_s, _or(span.t_received_s, down_first))
    t_recv_app = event.get("t_recv")
    t_reply_app = event.get("t_reply")
    received = _or(span.t_received_s, down_last)
    sending = _or(span.t_sending_s, received)
    up_first = _or(up.first_in_s, sending)
    up_last = _or(up.last_out_s, _or(span.t_sent_s, up_first))
    parts = {
        "supernode_poll_s": max(0.0, down_first - t_sent),
        "clientapp_start_s": max(0.0, float(t_recv_app) - received) if t_recv_app is not None else 0.0,
        "app_other_s": max(0.0, float(event.get("t_app_s") or 0.0) - compute),
        "reply_pickup_s": max(0.0, up_first - float(t_reply_app)) if t_reply_app is not None else 0.0,
        "serverapp_poll_s": max(0.0, t_replied - up_last),
    }
    bulk = {"down_bytes": down.bulk_bytes, "down_s": down.bulk_duration_s, "down_sender_idle_s": down.sender_idle_s,
            "down_request_flight_s": down.request_flight_s,
            "down_first_s": down.bulk_first_in_s, "down_last_s": down.bulk_last_out_s,
            "up_bytes": up.bulk_bytes, "up_s": up.bulk_duration_s, "up_sender_idle_s": up.sender_idle_s,
            "up_request_flight_s": up.request_flight_s,
            "up_first_s": up.bulk_first_in_s, "up_last_s": up.bulk_last_out_s}
    return MessageTimes(
        client_id=measure.client_id, stage=str(event["stage"]), bytes_down=float(down.bytes), bytes_up=float(up.bytes),
        flower_bytes_down=float(event.get("bytes_down") or 0), flower_bytes_up=float(event.get("bytes_up") or 0),
        t_start_s=t_sent, t_end_s=t_replied, t_down_s=down.duration_s, t_compute_s=compute, t_up_s=up.duration_s,
        parts=parts, error=event.get("error"), bulk=bulk, objects_down=int(event.get("objects_down") or 0),
        objects_up=int(event.get("objects_up") or 0), process_start_s=span.startup_s, launch_s=span.launch_s,
        t_receiving_s=span.t_receiving_s, t_sent_s=span.t_sent_s,
        down_before_pushed_s=None if event.get("t_pushed") is None else max(0.0, float(event["t_pushed"]) - down_first),
        t_serverapp_push_s=None if event.get("t_pushed") is None else max(0.0, float(event["t_pushed"]) - t_sent),
        serverapp_pushed_with=None if event.get("pushed_with") is None else int(event["pushed_with"]),
        t_serverapp_pull_s=None if event.get("t_pull") is None else max(0.0, t_replied - float(event["t_pull"])),
        serverapp_pulled_with=None if event.get("pulled_with") is None else int(event["pulled_with"]))


def match_messages(events: Sequence[Mapping[str, Any]], measures: Sequence[Any],
                   ) -> list[tuple[Mapping[str, Any], Any | None]]:
    """Pair each message event with the SuperNode span that carried it, by time.

    A client handles one message at a time and gets the next only after the server has its reply, so
    the span of a client's k-th event is the last one it received after the server had the reply to
    its (k-1)-th and before the k-th reply (rounds need no group id: apps on Flower's message API
    send none; warm-up and hello messages fall before the first window's last span).
    """
    spans_by_client: dict[int, list[Any]] = {}
    for m in measures:
        spans_by_client.setdefault(m.client_id, []).append(m)
    for lst in spans_by_client.values():
        lst.sort(key=lambda m: m.span.t_receiving_s)
    out: list[tuple[Mapping[str, Any], Any | None]] = []
    last_reply: dict[int, float] = {}
    for ev in sorted(events, key=lambda e: (e["client_id"], e["t_sent"])):
        cid = int(ev["client_id"])
        lo, hi = last_reply.get(cid, float("-inf")), float(ev["t_replied"])
        inside = [m for m in spans_by_client.get(cid, []) if lo < m.span.t_receiving_s <= hi]
        out.append((ev, inside[-1] if inside else None))
        last_reply[cid] = hi
    return out


def round_records(run_id: str, engine: str, round_index: int, times: Sequence[MessageTimes],
                  profile_of: Mapping[int, str], sampled: Sequence[int], dropped: Sequence[int],
                  host: HostFactory | None = None, late: Sequence[int] = (),
                  **round_fields: Any) -> tuple[list[ClientRoundRecord], RoundRecord]:
    """Client and round records on the emulation's clock: each stage ends when the ServerApp has every reply.

    ``late``: clients the ServerApp's round policy closed the training stage without (their replies were
    never pulled: no message event, no stage record); the uplink they spent is not measured (their uploads
    end after the round's records are written).

    The round's time is the server's whole round (``wall_time_s``: from configuring it to its end,
    pushes and aggregation included, as the deployment model counts it) when the apps logged it, else
    the span from the first push to the last reply. With ``host`` the round gets its host record from
    the host time of each stage's critical client.
    """
    stages: list[str] = []
    for t in sorted(times, key=lambda t: t.t_start_s):
        if t.stage not in stages:
            stages.append(t.stage)
    clients: list[ClientRoundRecord] = []
    by_client: dict[int, list[MessageTimes]] = {}
    for t in times:
        by_client.setdefault(t.client_id, []).append(t)
    for cid in sorted(set(by_client) | set(sampled)):
        rows = sorted(by_client.get(cid, []), key=lambda t: stages.index(t.stage))
        recs = [StageRecord(t.stage, t.bytes_down, t.bytes_up, t.t_down_s, t.t_compute_s, t.t_up_s, t.t_framework_s,
                            t_host_s=t.t_host_s) for t in rows if t.error is None]
        is_late = cid in late
        is_dropped = not is_late and (cid in dropped or any(t.error for t in rows)
                                      or (cid in sampled and len(rows) < len(stages)))
        clients.append(ClientRoundRecord(run_id, engine, round_index, cid, profile_of.get(cid, "?"), recs,
                                         dropped=is_dropped, late=is_late))
    stage_times: dict[str, float] = {}
    comm = compute = 0.0
    held = MessageHold()
    framework_parts = dict.fromkeys(FRAMEWORK_PARTS, 0.0)
    for s in stages:
        rows = [t for t in times if t.stage == s and t.error is None]
        if not rows:
            continue
        stage_times[s] = max(t.t_end_s for t in rows) - min(t.t_start_s for t in rows)
        # The barrier-holder: the client whose upload finished last (the ServerApp pulls them together).
        crit = max(rows, key=lambda t: t.t_end_s - t.parts.get("serverapp_poll_s", 0.0))
        comm += crit.t_down_s + crit.t_up_s
        compute += crit.t_compute_s
        held += MessageHold(crit.t_host_s or 0.0, crit.t_device_s or 0.0, crit.t_server_s or 0.0)
        for k in FRAMEWORK_PARTS:
            framework_parts[k] += crit.parts.get(k, 0.0)
    ok = [t for t in times if t.error is None]
    span = (max(t.t_end_s for t in ok) - min(t.t_start_s for t in ok)) if ok else 0.0
    wall = round_fields.get("wall_time_s")
    round_time = max(span, float(wall)) if wall is not None else span
    extra = {"clock": "wall", "bytes": "wire (shaper ledger)", "messages_span_s": span,
             "flower_bytes_down_total": sum(t.flower_bytes_down for t in ok),
             "flower_bytes_up_total": sum(t.flower_bytes_up for t in ok),
             "framework_parts_s": framework_parts,
             "dropped": sorted(c.client_id for c in clients if c.dropped)}
    extra.update(round_fields.pop("extra", {}) or {})
    if host is not None and ok:
        round_fields["host"] = host(held, round_time, min(t.t_start_s for t in ok), max(t.t_end_s for t in ok))
    record = RoundRecord(
        run_id=run_id, engine=engine, round=round_index, num_clients=len(clients), round_time_s=round_time,
        comm_time_s=comm, compute_time_s=compute, framework_time_s=max(0.0, round_time - comm - compute),
        stage_times_s=stage_times, bytes_down_total=sum(c.bytes_down for c in clients),
        bytes_up_total=sum(c.bytes_up for c in clients), extra=extra, late_clients=len(late),
        dropped_clients=len(extra["dropped"]),
        wasted_bytes_up=None if late else 0.0, **round_fields)
    return clients, record
