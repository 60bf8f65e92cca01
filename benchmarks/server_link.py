"""The server's shared link in the shaper against the model's water-filling: N clients download at once
behind one server uplink.

Usage: .venv/bin/python benchmarks/server_link.py [--clients 8] [--client-mbps 300] [--server-mbps 1000]
       [--mbytes 40] [--repeats 3]

Three processes, as emulate runs them: an upstream (the "server") that sends ``--mbytes`` MB to every client
connection as soon as it connects; the shaper (``python -m fedbw.shaper.service``) with one route per client
at ``--client-mbps`` down and the server link at ``--server-mbps`` shared by every client's download; and
this script as the clients, which connect together and time each download's last byte at the receiver
(perf_counter; CLOCK_MONOTONIC is shared by the processes). The model is
``fedbw.netmodel.sharing.finish_times`` on the same flows. One clients-at-a-time variant (staggered starts, so
early flows run alone at their own cap) checks the water-filling between events. Prints a table and writes
benchmarks/results/server-link.json (docs/methodology.md's server-link table is generated from it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedbw.netmodel.sharing import Flow, finish_times  # noqa: E402
from fedbw.netmodel.transfer import mbps_to_bytes_per_s  # noqa: E402
from fedbw.processes import Supervisor  # noqa: E402
from fedbw.shaper import ClientRoute, LinkSpec  # noqa: E402
from fedbw.shaper.service import parse_ready, write_spec  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "server-link.json"
BLOCK = b"\0" * 65536


class Upstream(threading.Thread):
    """Sends ``nbytes`` to every connection, then closes it (the server's downloads)."""

    def __init__(self, nbytes: int) -> None:
        super().__init__(daemon=True)
        self.nbytes = nbytes
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.sock.getsockname()[1]

    def run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._send, args=(conn,), daemon=True).start()

    def _send(self, conn: socket.socket) -> None:
        left = self.nbytes
        try:
            conn.recv(1)  # the client's go byte: the download starts when the client asks
            while left > 0:
                n = conn.send(BLOCK[:min(left, len(BLOCK))])
                left -= n
        except OSError:
            pass
        finally:
            conn.close()


def download(port: int, nbytes: int, start_at: float, out: dict[str, float], key: str) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        while time.perf_counter() < start_at:
            time.sleep(0.0005)
        t0 = time.perf_counter()
        s.sendall(b"g")
        got = 0
        while got < nbytes:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            got += len(chunk)
        out[key] = time.perf_counter() - t0
        out[key + ":start"] = t0
        out[key + ":bytes"] = got


def run_case(n: int, client_mbps: float, server_mbps: float, nbytes: int, stagger_s: float) -> dict[str, Any]:
    """One round of n concurrent (or staggered) downloads through the shaper; measured vs modelled times."""
    up = Upstream(nbytes)
    up.start()
    tmp = Path(tempfile.mkdtemp(prefix="fedbw-bench-server-link-"))
    link = LinkSpec(up_mbps=1000.0, down_mbps=client_mbps)
    routes = [ClientRoute(f"c{i}", "127.0.0.1", 0, "127.0.0.1", up.port, link) for i in range(n)]
    shared = LinkSpec(up_mbps=server_mbps, down_mbps=server_mbps)
    spec = write_spec(tmp / "spec.json", routes, shared_link=shared)
    times: dict[str, float] = {}
    with Supervisor() as sup:
        child = sup.start("shaper", [sys.executable, "-m", "fedbw.shaper.service", str(spec)],
                          {**os.environ, "PYTHONPATH": str(ROOT)}, tmp / "shaper.log")
        ports = parse_ready(child.wait_for_line("READY {", 30).text)
        t_go = time.perf_counter() + 0.5
        threads = [threading.Thread(target=download, args=(ports[f"c{i}"], nbytes, t_go + i * stagger_s, times, f"c{i}"))
                   for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
    up.sock.close()
    starts = [times[f"c{i}:start"] - t_go for i in range(n)]
    flows = [Flow(s, nbytes, mbps_to_bytes_per_s(client_mbps)) for s in starts]
    model_end = finish_times(flows, mbps_to_bytes_per_s(server_mbps))
    rows = []
    for i in range(n):
        measured, model = times[f"c{i}"], model_end[i] - starts[i]
        rows.append({"client": i, "start_s": starts[i], "bytes": times[f"c{i}:bytes"], "measured_s": measured,
                     "model_s": model, "error": measured / model - 1})
    return {"clients": n, "client_mbps": client_mbps, "server_mbps": server_mbps, "bytes": nbytes,
            "stagger_s": stagger_s, "rows": rows,
            "max_abs_error": max(abs(r["error"]) for r in rows),
            "last_measured_s": max(r["measured_s"] + r["start_s"] for r in rows),
            "last_model_s": max(model_end)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--client-mbps", type=float, default=300.0)
    ap.add_argument("--server-mbps", type=float, default=1000.0)
    ap.add_argument("--mbytes", type=float, default=40.0, help="MB per download")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    nbytes = int(args.mbytes * 1e6)
    cases = []
    for stagger in (0.0, 0.5):
        reps = [run_case(args.clients, args.client_mbps, args.server_mbps, nbytes, stagger) for _ in range(args.repeats)]
        best = sorted(reps, key=lambda r: r["max_abs_error"])[len(reps) // 2]  # the median repeat by its worst error
        cases.append({"stagger_s": stagger, "median_repeat": best,
                      "max_abs_error_per_repeat": [r["max_abs_error"] for r in reps]})
        print(f"stagger {stagger:.1f} s: last download measured {best['last_measured_s']:.3f} s, model "
              f"{best['last_model_s']:.3f} s; worst client error per repeat "
              + ", ".join(f"{100 * e:+.1f} %" for e in (r['max_abs_error'] for r in reps)), flush=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores, Python {platform.python_version()}",
              "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}, "cases": cases}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
