"""The shaper under hostile traffic, as emulate runs it (its own process, series sampler on).

Beside one well-behaved client uploading in bulk, other clients' links get: garbage bytes, half-open
connections, 1,000 rapid connects and disconnects (half of them reset), a client that never reads its
download, and one that sends without end. Kept: the shaper stays up, the victim's link is never ahead
of its rate and keeps carrying bytes, and the shaper process's memory stays under a stated bound.

The victim's rate under attack against the same victim alone is measured and reported (the reliability
row), not asserted: issue 15's 2 % is a timing target that a host busy with other work breaks (see
docs/reliability.md), a benchmark's to hold, not a test's.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import errno
import struct
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from fedbw.processes import Supervisor
from fedbw.shaper import ClientRoute, LinkSpec
from fedbw.shaper.service import READY, parse_ready, write_spec
from fedbw.shaper.stages import FIRE_SLACK_S  # how early a delivery may be against the link's ideal time

pytestmark = pytest.mark.slow

VICTIM_MBPS = 30.0
MEASURE_FROM_S, MEASURE_TO_S = 1.0, 7.0
RAPID_CONNECTS = 1000
#: What the shaper process may grow by under all of it (its queues are bounded per pipe, 4 MiB at
#: most for an unpaced one; the ledger keeps one small record per connection).
RSS_GROWTH_BOUND_MIB = 64


class _Upstream:
    """The server side: counts the victim's bytes as they arrive; floods anyone who says FLOOD."""

    def __init__(self) -> None:
        self.victim: list[tuple[float, int]] = []
        self.conns: list[list[tuple[float, int]]] = []  #: the same arrivals, per victim connection
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.read(5)
            if head == b"VICTM":
                mine: list[tuple[float, int]] = []
                self.conns.append(mine)
                while data := await reader.read(65536):
                    mine.append((time.perf_counter(), len(data)))
                    self.victim.append(mine[-1])
            elif head == b"FLOOD":
                block = b"\xab" * 65536
                while True:
                    writer.write(block)
                    await writer.drain()
            else:
                while await reader.read(65536):
                    pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # cancelled: the attackers' process is ending with connections still open
        finally:
            writer.close()


async def _send_for(port: int, seconds: float, head: bytes = b"", *, reconnect: bool = False) -> None:
    """Upload as fast as the shaper takes it, for ``seconds`` (the victim says VICTM first). With
    ``reconnect`` (the flooder) a reset connection is opened again: dropping an abusive connection is
    a fair defence, and the flood goes on regardless."""
    block = b"\xcd" * 65536
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(head)
            while time.perf_counter() < end:
                writer.write(block)
                await writer.drain()
        except ConnectionError:
            if not reconnect:
                raise
            await asyncio.sleep(0.05)
        finally:
            writer.close()


async def _garbage(port: int, seconds: float) -> None:
    rnd = os.urandom(1 << 16)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        try:
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(rnd[: 1 + (int(time.perf_counter() * 1e6) % len(rnd))])
            await w.drain()
            w.close()
        except ConnectionError:
            pass
        await asyncio.sleep(0.05)


async def _half_open(port: int, n: int) -> list[asyncio.StreamWriter]:
    writers = []
    for _ in range(n):
        _, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"half")
        w.write_eof()  # our side is done; the connection stays open the other way
        writers.append(w)
    return writers


#: Why rapid connects failed (errno names): printed by the attackers' process.
RAPID_ERRORS: dict[str, int] = {}


async def _connect_once(port: int, reset: bool) -> bool:
    s = socket.socket()
    s.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(s, ("127.0.0.1", port))
        if reset:  # reset instead of closing
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return True
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        RAPID_ERRORS[name] = RAPID_ERRORS.get(name, 0) + 1
        return False
    finally:
        s.close()


async def _rapid(port: int, n: int) -> int:
    """``n`` connects, one after another, half of them reset. Counted: connects that got through.

    No retry: the refusals CI saw (28 of 1,000, 41 in a local run) were connects made after the test had
    stopped the shaper, on a host slow enough that the attack outlasted the victim's upload; the test now
    keeps the shaper up until the attackers report, so a refusal is the shaper's."""
    done = 0
    for i in range(n):
        done += await _connect_once(port, bool(i % 2))
        if i % 50 == 0:
            await asyncio.sleep(0)
    return done


async def _never_reads(port: int) -> asyncio.StreamWriter:
    _, w = await asyncio.open_connection("127.0.0.1", port)
    w.transport.pause_reading()
    w.write(b"FLOOD")
    return w


async def _attack(ports: dict[str, int], seconds: float) -> int:
    """Every attack at once, for ``seconds``; returns how many rapid connects got through."""
    keep = await _half_open(ports["halfopen"], 50)
    keep.append(await _never_reads(ports["neverreads"]))
    rapid_done, *_ = await asyncio.gather(_rapid(ports["rapid"], RAPID_CONNECTS), _garbage(ports["garbage"], seconds),
                                          _send_for(ports["flooder"], seconds, reconnect=True))
    for w in keep:
        w.close()
    return rapid_done


def attacker_main() -> None:
    """The attackers' own process (so the victim's sender and receiver keep the test's CPU): prints its
    upstream's port, reads the shaper's ports from stdin, attacks, prints how many rapid connects worked."""
    seconds = float(sys.argv[2])

    async def main() -> None:
        up = _Upstream()
        await up.start()
        print(up.port, flush=True)
        ports = json.loads(await asyncio.to_thread(sys.stdin.readline))
        done = await _attack(ports, seconds)
        print(f"RAPID_ERRORS {json.dumps(RAPID_ERRORS)}", flush=True)  # for the failure message
        print(f"RAPID {done}", flush=True)

    asyncio.run(main())


def said_errors(said: str) -> str:
    found = re.search(r"^RAPID_ERRORS (.*)$", said, re.M)
    return found.group(1) if found else "not reported"


def test_hostile_clients_do_not_disturb_other_links(tmp_path: Path, reliability) -> None:
    reliability.area = "hostile input"
    reliability.tried = (f"the shaper (own process) beside a {VICTIM_MBPS:g} Mbps bulk upload: garbage bytes, 50 "
                         f"half-open connections, {RAPID_CONNECTS} rapid connects/resets, a client that never reads, "
                         "one that sends without end (attackers in a process of their own)")
    # What is asserted: the shaper stays up, every rapid connect is served, memory stays bounded, and the
    # victim's link is never ahead of its rate (the attackers' links lend it nothing) and still carries
    # its bytes under attack. Its rate under attack and alone (through the same shaper a few seconds
    # before) are measured, not asserted: host load moves them.
    reliability.kept = (f"shaper up; all rapid connects served; shaper memory growth ≤ {RSS_GROWTH_BOUND_MIB} MiB; "
                        "the victim's link never ahead of its rate and still carrying its upload (its rate "
                        "against the victim alone measured)")
    seconds = MEASURE_TO_S + 0.5
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    attacker = subprocess.Popen([sys.executable, "-c", "from tests.hardening.test_hostile_traffic import "
                                 "attacker_main; attacker_main()", "attack", repr(seconds)], cwd=root, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = attacker.stdout.readline()
        assert first.strip().isdigit(), f"the attackers' process did not start: {first}{attacker.stdout.read()[-3000:]}"
        attack_upstream = int(first)

        async def main() -> tuple[list[tuple[float, int]], list[tuple[float, int]], float, list[list], str]:
            up = _Upstream()
            await up.start()
            link = LinkSpec(VICTIM_MBPS, VICTIM_MBPS)
            routes = [ClientRoute(i, "127.0.0.1", 0, "127.0.0.1", up.port, link) for i in ("alone", "victim")]
            routes += [ClientRoute(i, "127.0.0.1", 0, "127.0.0.1", attack_upstream, link)
                       for i in ("garbage", "halfopen", "rapid", "neverreads", "flooder")]
            spec = write_spec(tmp_path / "spec.json", routes, series=tmp_path / "series.jsonl")
            with Supervisor() as sup:
                shaper = sup.start("shaper", [sys.executable, "-m", "fedbw.shaper.service", str(spec)],
                                   env, tmp_path / "shaper.log")
                line = await asyncio.to_thread(shaper.wait_for_line, READY, 30.0)
                ports = parse_ready(line.text)
                proc = psutil.Process(shaper.pid)
                t0 = time.perf_counter()  # first the victim alone: the control, on the same host, same minute
                starts = [t0]
                await _send_for(ports["alone"], seconds, b"VICTM")
                alone = [(t - t0, n) for t, n in up.victim]
                up.victim.clear()
                rss0 = proc.memory_info().rss
                attacker.stdin.write(json.dumps(ports) + "\n")
                attacker.stdin.flush()
                t0 = time.perf_counter()
                starts.append(t0)
                await _send_for(ports["victim"], seconds, b"VICTM")
                rss1 = proc.memory_info().rss
                # the shaper stays up until the attackers are done: on a slow host their 1,000 connects
                # can outlast the victim's upload, and a connect after the shaper stopped is refused
                said = (await asyncio.to_thread(attacker.communicate, timeout=60))[0]
                sup.check()  # the shaper is still up
                up.server.close()
            assert len(up.conns) == 2, f"{len(up.conns)} victim connections, expected alone's and under attack's"
            # each connection's arrivals from just before it connected (its link idle till then)
            per_conn = [[(t - start, n) for t, n in conn] for start, conn in zip(starts, up.conns)]
            return alone, [(t - t0, n) for t, n in up.victim], (rss1 - rss0) / 2**20, per_conn, said

        alone, victim, growth_mib, per_conn, said = asyncio.run(main())
        found = re.search(r"^RAPID (\d+)$", said, re.M)
        assert attacker.returncode == 0 and found, f"the attackers' process failed:\n{said[-3000:]}"
        rapid_done = int(found.group(1))
    finally:
        if attacker.poll() is None:
            attacker.kill()
            attacker.wait()

    def rate_pct(samples: list[tuple[float, int]]) -> float:
        got = sum(n for t, n in samples if MEASURE_FROM_S <= t < MEASURE_TO_S)
        return 100 * got * 8 / ((MEASURE_TO_S - MEASURE_FROM_S) * VICTIM_MBPS * 1e6)

    attacked, control = rate_pct(victim), rate_pct(alone)
    reliability.measure(victim_rate_pct=round(attacked, 2), alone_rate_pct=round(control, 2),
                        shaper_rss_growth_mib=round(growth_mib, 1), rapid_connects=rapid_done,
                        host_load_1m=round(os.getloadavg()[0], 1))
    assert rapid_done == RAPID_CONNECTS, (f"only {rapid_done} of {RAPID_CONNECTS} rapid connects were served "
                                          f"(refused: {said_errors(said)})")
    assert growth_mib <= RSS_GROWTH_BOUND_MIB, f"the shaper grew by {growth_mib:.1f} MiB"
    link_bytes_per_s = VICTIM_MBPS * 1e6 / 8
    for name, samples in zip(("alone", "under attack"), per_conn):
        through = 0
        for t, n in samples:
            through += n
            assert through <= link_bytes_per_s * (t + FIRE_SLACK_S), (
                f"the victim {name} had {through} B by {t:.3f} s: more than its {VICTIM_MBPS:g} Mbps link carries")
    assert any(MEASURE_FROM_S <= t < MEASURE_TO_S for t, _ in per_conn[1]), "the victim's upload stalled under attack"
