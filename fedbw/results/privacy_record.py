"""A round's privacy record read back from the ServerApp's ``round_end`` event (the record itself,
:class:`~fedbw.privacy.record.PrivacyRound`, lives beside the accounting that fills it)."""

from __future__ import annotations

from typing import Any

from fedbw.privacy.record import PrivacyRound


def privacy_round_from_event(data: dict[str, Any] | None) -> PrivacyRound | None:
    """The ``privacy`` field of a ``round_end`` event as a record (None when the apps wrote none)."""
    return None if not data else PrivacyRound(**data)
