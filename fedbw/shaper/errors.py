"""The shaper's user-facing error.

Anything a person can cause (a bad rate, a busy port, an upstream that is not running) raises
:class:`ShaperError`, whose message names the field or flag to change. The CLI prints it without a
traceback because it is a :class:`fedbw.errors.FedbwError`.
"""

from __future__ import annotations

from fedbw.errors import FedbwError


class ShaperError(FedbwError):
    """A link spec, route, address or upstream that the shaper cannot work with."""

    exit_code = 2
