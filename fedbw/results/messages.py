"""Measured messages: what emulate measured about every message, typed and versioned, and the only thing
``fedbw calibrate`` fits from.

Why a record of its own: the model's constants are fitted from emulate's measurements, and a fit can be
trusted only if its input is pinned down — which fields there are, what each means, which fedbw wrote
them. emulate writes these records into ``emulate.json`` (``messages``); ``fedbw calibrate`` gathers
them from its runs, labels each with the run it came from, and keeps them beside the calibration
(``<calibration>.messages.jsonl``), so a fit can be repeated, cross-validated and bootstrapped later
without emulating again. Nothing here comes from the model: every figure is a measurement (the shaper's
series, the SuperNodes' stamps, the apps' events).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, field
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass as validated

from fedbw.errors import ConfigError
from fedbw.files.atomic import write_text_atomic
from fedbw.files.versioned import MEASURED_MESSAGES


@validated(config=ConfigDict(extra="forbid"))
class MeasuredMessage:
    """One message of one client in one stage, as emulate measured it (seconds; times on the emulation's
    clock, dilation undone)."""

    round: int
    client_id: int
    stage: str
    bytes_down: float  #: on the wire (the shaper's ledger)
    bytes_up: float
    flower_bytes_down: float  #: Flower's message size (the apps' events)
    flower_bytes_up: float
    t_down_s: float  #: the download on the link, first byte in → last byte out
    t_up_s: float
    t_compute_s: float  #: training, as the ClientApp measured it
    t_framework_s: float  #: everything else: Flower's own time
    total_s: float  #: the ServerApp pushed → it pulled the reply
    parts: dict[str, float]  #: the framework time's parts (fedbw.flower_protocol.FRAMEWORK_PARTS)
    bulk: dict[str, Any] = field(default_factory=dict)  #: payload-only transfers and sender idle time
    error: str | None = None
    objects_down: int = 0  #: Flower's objects in the message and in the reply
    objects_up: int = 0
    process_start_s: float | None = None  #: "Received" → the ClientApp process logged its start
    launch_s: float | None = None  #: "Receiving" → the ClientApp process logged its start
    t_receiving_s: float | None = None  #: the SuperNode's "Receiving" and "Sent successfully" stamps
    t_sent_s: float | None = None
    t_host_s: float | None = None  #: time the host, not the link, held (emulate's verdict, measured)
    t_device_s: float | None = None  #: link idle the device's own CPU held (emulate's split; not in t_host_s)
    t_server_s: float | None = None  #: link idle the server's own CPU held (likewise)
    down_before_pushed_s: float | None = None  #: the download's lead over the end of the ServerApp's push
    #: the ServerApp's push of the stage's batch (``serverapp_pushed_with`` messages) and its pull that brought
    #: this reply (with ``serverapp_pulled_with`` replies), timed by the ServerApp; None in files from before
    #: 2026-12-08
    t_serverapp_push_s: float | None = None
    serverapp_pushed_with: int | None = None
    t_serverapp_pull_s: float | None = None
    serverapp_pulled_with: int | None = None
    #: Set by ``fedbw calibrate`` when it gathers messages: which of its runs (e.g. "unshaped", "shaped")
    #: and the model or probe that made the message.
    run: str = ""
    model: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def met_push(self) -> bool | None:
        """Whether the download began inside the ServerApp's push (the SuperNode's poll fell in it, so the
        download holds Flower's pull backoff); None when the run did not log the push's end."""
        return None if self.down_before_pushed_s is None else self.down_before_pushed_s > MET_PUSH_S


#: A download counts as meeting the ServerApp's push when its first byte came this long before the push ended.
MET_PUSH_S = 0.05

_ADAPTER = TypeAdapter(MeasuredMessage)


def message_from_json(data: object, where: str) -> MeasuredMessage:
    """A message from its JSON object; ConfigError naming ``where`` and the first bad field."""
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{where}: not a valid measured message ({loc}: {first['msg']})") from None


def write_messages(path: str | os.PathLike[str], messages: Iterable[MeasuredMessage],
                   meta: dict[str, Any] | None = None) -> Path:
    """A measured-messages file: a head line (schema, version, ``meta``), then one message a line; whole
    or not at all."""
    lines = [json.dumps({**MEASURED_MESSAGES.stamp(), **(meta or {})}, sort_keys=True)]
    lines += [json.dumps(m.to_json(), sort_keys=True) for m in messages]
    return write_text_atomic(path, "\n".join(lines) + "\n")


def read_messages(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[MeasuredMessage]]:
    """(the head, the messages) of a measured-messages file; ConfigError naming the file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no measured-messages file there; `fedbw calibrate --out FILE` writes one "
                          "beside FILE") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: unreadable ({exc})") from None
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append((lineno, json.loads(line)))
            except json.JSONDecodeError:
                raise ConfigError(f"{path}:{lineno}: not a JSON line; the file is damaged") from None
    if not rows:
        raise ConfigError(f"{path}: empty; not a fedbw measured-messages file")
    head = dict(MEASURED_MESSAGES.check(rows[0][1], path))
    return head, [message_from_json(d, f"{path}:{n}") for n, d in rows[1:]]
