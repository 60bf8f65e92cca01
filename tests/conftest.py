"""Suite-wide set-up.

Tests stand in for a user's Ctrl-C by sending SIGINT to the commands they start. A terminal's
foreground job has SIGINT at its default; a suite started in the background of a non-interactive
shell (`pytest ... &`, nohup) inherits SIGINT *ignored*, and so would every command it starts, so each
Ctrl-C test would fail and leave the command's processes running. The suite puts SIGINT back to
Python's default handler before any test starts its first process.
"""

from __future__ import annotations

import signal

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
