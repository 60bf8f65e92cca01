"""Process supervision: groups die together, failures quote the child's log, signals tear down."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from fedbw.errors import RunError
from fedbw.processes import Child, Supervisor

PY = sys.executable


def _pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def test_stop_kills_grandchildren_too(tmp_path: Path) -> None:
    # The child starts a grandchild (as a SuperNode starts SuperExec) and reports its pid.
    code = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
            " print('grandchild', p.pid, flush=True); time.sleep(60)")
    child = Child("parent", [PY, "-c", code], os.environ, tmp_path / "parent.log")
    line = child.wait_for_line("grandchild", 10)
    grandchild = int(line.text.split()[1])
    assert _pid_alive(grandchild)
    child.stop(grace_s=2)
    assert not child.alive
    assert not _pid_alive(grandchild)
    assert not child.group_alive()
    assert "grandchild" in (tmp_path / "parent.log").read_text()


def test_child_that_dies_while_starting_reports_its_last_lines(tmp_path: Path) -> None:
    child = Child("superlink", [PY, "-c", "print('bind failed: address in use'); raise SystemExit(3)"],
                  os.environ, tmp_path / "sl.log")
    with pytest.raises(RunError) as err:
        child.wait_for_line("Fleet HTTP API", 10)
    msg = str(err.value)
    assert "superlink" in msg and "code 3" in msg and "bind failed: address in use" in msg


def test_missing_program_is_a_run_error(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="could not start"):
        Child("x", [str(tmp_path / "no-such-program")], os.environ, tmp_path / "x.log")


def test_supervisor_notices_an_unexpected_death_but_not_a_requested_kill(tmp_path: Path) -> None:
    with Supervisor() as sup:
        quiet = sup.start("victim", [PY, "-c", "import time; time.sleep(60)"], os.environ, tmp_path / "v.log")
        crasher = sup.start("crasher", [PY, "-c", "print('boom'); raise SystemExit(1)"], os.environ,
                            tmp_path / "c.log")
        quiet.kill()  # a drop fault: expected
        crasher.proc.wait(10)
        with pytest.raises(RunError, match="crasher .* exited unexpectedly with code 1"):
            sup.check()
    assert not quiet.group_alive() and not crasher.group_alive()


def test_sigterm_inside_supervisor_stops_every_child(tmp_path: Path) -> None:
    started: list[Child] = []
    with pytest.raises(KeyboardInterrupt):
        with Supervisor() as sup:
            for i in range(3):
                started.append(sup.start(f"c{i}", [PY, "-c", "import time; time.sleep(60)"], os.environ,
                                         tmp_path / f"c{i}.log"))
            threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
            time.sleep(10)
    assert all(not c.group_alive() for c in started)
    assert signal.getsignal(signal.SIGTERM) is not None  # handler restored, not left raising


def test_stop_escalates_to_sigkill(tmp_path: Path) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    child = Child("stubborn", [PY, "-c", code], os.environ, tmp_path / "s.log")
    child.wait_for_line("ready", 10)
    child.stop(grace_s=0.5)
    assert not child.group_alive()
    assert child.returncode == -signal.SIGKILL  # killed by stop's escalation, not gone by itself (60 s on)


def test_detached_grandchildren_are_found_and_stopped(tmp_path: Path) -> None:
    """Flower's SuperLink starts SuperExec in a new session: killing the SuperLink's group misses it."""
    from fedbw.processes.groups import descendant_groups

    # argv[0] contains "flower" as Flower's scripts do; the grandchild detaches with its own session
    code = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(60)', 'flower-superexec'], start_new_session=True);"
            " print('detached', p.pid, flush=True); time.sleep(60)")
    with Supervisor() as sup:
        child = sup.start("superlink", [PY, "-c", code, "flower-superlink"], os.environ, tmp_path / "sl.log")
        detached = int(child.wait_for_line("detached", 10).text.split()[1])
        assert detached in descendant_groups([child.pid])  # its own group, found through the tree
    assert not _pid_alive(detached)


def test_ctrl_c_while_a_child_starts_still_stops_that_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C that lands between the fork and the child's registration must not leave it running."""
    import fedbw.processes.supervisor as supervisor

    started: list[int] = []

    class InterruptedWhileStarting(Child):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            started.append(self.pid)
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs at the next bytecode: before registration
            time.sleep(0.2)

    monkeypatch.setattr(supervisor, "Child", InterruptedWhileStarting)
    with pytest.raises(KeyboardInterrupt):
        with Supervisor() as sup:
            sup.start("supernode", [PY, "-c", "import time; time.sleep(60)"], os.environ, tmp_path / "s.log")
            pytest.fail("the interrupt was lost")
    assert started and not _pid_alive(started[0])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_supervisor_that_is_stopping_starts_nothing(tmp_path: Path) -> None:
    """A child started from another thread (emulate's returning SuperNode) as the run stops is refused, never left."""
    with Supervisor() as sup:
        pass
    with pytest.raises(RunError, match="the run is stopping"):
        sup.start("late", [PY, "-c", "import time; time.sleep(60)"], os.environ, tmp_path / "late.log")
    assert sup.children == []
