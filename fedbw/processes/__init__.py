"""Every child process fedbw starts goes through here: :class:`Supervisor` starts and stops them,
:class:`Child` is one of them with its stamped log, :mod:`.groups` finds and signals process groups."""

from fedbw.processes.child import Child, LogLine, strip_ansi
from fedbw.processes.supervisor import Supervisor

__all__ = ["Child", "LogLine", "Supervisor", "strip_ansi"]
