"""A SuperNode's stamped log → one span per message it handled.

Flower 1.42's SuperNode logs, per message: ``[RUN r, ROUND g]``, ``Receiving: <type> message``,
``Received successfully``; its ClientApp process logs ``Start `flwr-clientapp` process``; then
``Sending: <type> message`` and ``Sent successfully``. The reader thread of
:class:`fedbw.processes.Child` stamps each line with ``perf_counter`` on arrival, so the
spans below are on the shaper's clock (within a few ms of pipe latency).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fedbw.processes import LogLine

_GROUP = re.compile(r"\[RUN (\d+)(?:, ROUND ([^\]]*))?\]")
_RECEIVING = re.compile(r"Receiving: (\S+) message")
_SENDING = re.compile(r"Sending: (\S+) message")


@dataclass
class MessageSpan:
    """One message at one SuperNode: pulled, handed to a ClientApp process, replied to."""

    index: int  #: 0-based order at this SuperNode
    message_type: str
    group: str | None  #: the message's group id (the round for legacy strategies)
    t_receiving_s: float  #: message header pulled (downlink of its objects follows)
    t_received_s: float | None = None  #: all objects pulled
    t_app_start_s: float | None = None  #: the ClientApp process logged its start
    t_sending_s: float | None = None  #: reply ready, upload starts
    t_sent_s: float | None = None  #: reply fully pushed

    @property
    def complete(self) -> bool:
        return self.t_sent_s is not None

    @property
    def app_s(self) -> float | None:
        """Received → reply ready: SuperExec pickup, ClientApp start-up, the app's work, reply pickup."""
        if self.t_received_s is None or self.t_sending_s is None:
            return None
        return self.t_sending_s - self.t_received_s

    @property
    def launch_s(self) -> float | None:
        """Receiving → ClientApp process running: the SuperExec launches the process as soon as the message
        is known, so for a large message the process starts while its objects still download (what the
        model's ClientApp start counts from: :class:`fedbw.netmodel.flower.DeploymentClock`)."""
        if self.t_app_start_s is None:
            return None
        return self.t_app_start_s - self.t_receiving_s

    @property
    def startup_s(self) -> float | None:
        """Received → ClientApp process running: SuperExec's task poll plus process start (imports)."""
        if self.t_received_s is None or self.t_app_start_s is None:
            return None
        return self.t_app_start_s - self.t_received_s


def parse_supernode_log(lines: list[LogLine]) -> list[MessageSpan]:
    spans: list[MessageSpan] = []
    group: str | None = None
    current: MessageSpan | None = None
    for line in lines:
        text = line.text
        if (m := _GROUP.search(text)) is not None:
            group = m.group(2)
            continue
        if (m := _RECEIVING.search(text)) is not None:
            current = MessageSpan(len(spans), m.group(1), group, line.t_s)
            spans.append(current)
        elif current is None:
            continue
        elif "Received successfully" in text and current.t_received_s is None:
            current.t_received_s = line.t_s
        elif "Start `flwr-clientapp` process" in text and current.t_app_start_s is None:
            current.t_app_start_s = line.t_s
        elif _SENDING.search(text) and current.t_sending_s is None:
            current.t_sending_s = line.t_s
        elif "Sent successfully" in text and current.t_sent_s is None:
            current.t_sent_s = line.t_s
    return spans


def is_receiving(text: str) -> str | None:
    """The message type if ``text`` is a "Receiving" line."""
    m = _RECEIVING.search(text)
    return m.group(1) if m else None


def message_group(text: str) -> str | None:
    """The group id (round) if ``text`` is a ``[RUN r, ROUND g]`` line."""
    m = _GROUP.search(text)
    return m.group(2) if m and m.group(2) is not None else None
