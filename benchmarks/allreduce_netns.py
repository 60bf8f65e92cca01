"""The α-β model checked on a rate-limited link: measured gloo AllReduce between network namespaces.

Usage: .venv/bin/python benchmarks/allreduce_netns.py [--quick] [--rates 100,1000,2000] [--ranks 2,4]
       .venv/bin/python benchmarks/allreduce_netns.py --docs-only   # rewrite the docs table from the JSON

gloo connects rank to rank directly (addresses exchanged through the store), so no proxy can sit in
its path; the kernel shapes it instead. Each rank runs in a network namespace of its own
(``fedbwar-r<i>``), joined to a bridge in a switch namespace (``fedbwar-sw``) by a veth pair; tc htb
limits both directions of every rank's veth to the link rate (a full-duplex link, the NIC a ring
rank has), with a 1 MiB byte FIFO under it (a switch port's buffer; the veth's default queue of
1000 TSO packets would hold tens of megabytes) and a bucket of 2 ms of line rate (tc's default of
about one MTU loses link time whenever a timer fires late on a busy VM). htb counts Ethernet frames,
and a ring's links carry data and the ACKs of the opposite flow, so TCP payload moves at the catalog's
Ethernet efficiency:
busbw / line rate of ``eth-1g`` (1448/1514 for the frames, less the ACKs), the figure every Ethernet
fabric in the catalog is modelled with.

The ranks are fedbw's own harness (``fedbw.collectives``: nccl-tests' warm-up, timing and checks);
only where they run changes. For each rate and rank count it measures a 1 KiB AllReduce (for α) and
sizes whose bandwidth term dominates, and compares each in-place time with the ring model
t = 2(p−1)·α + 2(p−1)/p·n/B, B = rate × that efficiency. A row agrees when it is within ±10 %.
Namespaces are created and deleted by this script; it needs root and iproute2 (``ip``, ``tc``), and
says so and exits 0 otherwise. Prints a fixed-column table, writes
benchmarks/results/allreduce-netns.json and, with --write-docs, the table in docs/datacenter.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fedbw.catalog import get_fabric  # noqa: E402
from fedbw.collectives.launch import Placement  # noqa: E402

PREFIX = "fedbwar"
SWITCH = f"{PREFIX}-sw"
SUBNET = "10.232.0"
TOLERANCE = 0.10
#: TCP payload per unit of Ethernet line rate, as the catalog models every Ethernet fabric.
_ETH = get_fabric("eth-1g")
ETH_EFFICIENCY = _ETH.busbw_gbps / _ETH.line_rate_gbps
#: The FIFO under each htb class: a switch port's buffer.
QUEUE_BYTES = 1024 * 1024
#: htb's bucket depth in seconds of line rate: a timer that fires late on a busy VM would otherwise
#: lose link time that a real NIC does not (tc's default depth is about one MTU).
BURST_S = 0.002
#: A row counts for the check when the model's bandwidth term is at least this share of its time.
BANDWIDTH_DOMINATED = 0.9
OUT = ROOT / "benchmarks" / "results" / "allreduce-netns.json"
DOC = ROOT / "docs" / "datacenter.md"
#: Sizes per rate (bytes): 1 KiB for α, then sizes of ≈ 0.05–0.5 s per AllReduce at that rate.
SIZES = {100: [1024, 1 << 20, 4 << 20], 500: [1024, 4 << 20, 16 << 20], 1000: [1024, 8 << 20, 32 << 20],
         2000: [1024, 16 << 20, 64 << 20]}


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def unavailable() -> str | None:
    """Why the namespace check cannot run here, or None (fedbw.netns says it for every namespace user)."""
    from fedbw.netns import unavailable as why_not

    return why_not()


class NetnsLinks:
    """p namespaces on a bridge, every rank's veth limited to ``rate_mbps`` both ways; a context manager
    that deletes everything it made, also on error and Ctrl-C."""

    def __init__(self, ranks: int, rate_mbps: float) -> None:
        self.ranks, self.rate_mbps = ranks, rate_mbps
        self.names = [f"{PREFIX}-r{i}" for i in range(ranks)]

    def ip(self, rank: int) -> str:
        return f"{SUBNET}.{rank + 1}"

    def _htb(self, ns: str, dev: str) -> None:
        rate = f"{int(self.rate_mbps * 1e6)}bit"
        burst = str(max(16 * 1024, int(self.rate_mbps * 1e6 / 8 * BURST_S)))
        _sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10")
        _sh("ip", "netns", "exec", ns, "tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb",
            "rate", rate, "ceil", rate, "burst", burst, "cburst", burst)
        _sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "bfifo",
            "limit", str(QUEUE_BYTES))

    def __enter__(self) -> NetnsLinks:
        cleanup()
        try:
            _sh("ip", "netns", "add", SWITCH)
            _sh("ip", "-n", SWITCH, "link", "add", "br0", "type", "bridge")
            _sh("ip", "-n", SWITCH, "link", "set", "br0", "up")
            for i, ns in enumerate(self.names):
                rank_dev, sw_dev = f"{PREFIX}{i}", f"{PREFIX}s{i}"
                _sh("ip", "netns", "add", ns)
                _sh("ip", "link", "add", rank_dev, "type", "veth", "peer", "name", sw_dev)
                _sh("ip", "link", "set", rank_dev, "netns", ns)
                _sh("ip", "link", "set", sw_dev, "netns", SWITCH)
                _sh("ip", "-n", SWITCH, "link", "set", sw_dev, "master", "br0", "up")
                _sh("ip", "-n", ns, "addr", "add", f"{self.ip(i)}/24", "dev", rank_dev)
                _sh("ip", "-n", ns, "link", "set", rank_dev, "up")
                _sh("ip", "-n", ns, "link", "set", "lo", "up")
                self._htb(ns, rank_dev)  # the rank's uplink
                self._htb(SWITCH, sw_dev)  # its downlink
        except BaseException:
            cleanup()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        cleanup()


def cleanup() -> None:
    """Delete every namespace this script makes (their veths and qdiscs go with them)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in listed.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(f"{PREFIX}-"):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


class NetnsPlacement(Placement):
    """Rank i in namespace ``fedbwar-r<i>``, gloo on its veth."""

    def __init__(self, links: NetnsLinks) -> None:
        self.links = links
        self.master_addr = links.ip(0)
        self.link_gbps = payload_gbps(links.rate_mbps)

    def argv_prefix(self, rank: int) -> list[str]:
        return ["ip", "netns", "exec", self.links.names[rank]]

    def env(self, rank: int) -> dict[str, str]:
        return {"GLOO_SOCKET_IFNAME": f"{PREFIX}{rank}"}

    def describe(self) -> str:
        return f"{self.links.ranks} namespaces, {self.links.rate_mbps:g} Mbit/s per rank (tc htb)"


def payload_gbps(rate_mbps: float) -> float:
    """The model's B for an Ethernet link of ``rate_mbps`` (GB/s, 10^9 B)."""
    return rate_mbps * ETH_EFFICIENCY / 8e3


def compare(rate_mbps: float, ranks: int, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each measured row beside the ring model (α from the 1 KiB row, B = the link's payload rate)."""
    from fedbw.netmodel import allreduce

    busbw_gbps = payload_gbps(rate_mbps)
    small = min(rows, key=lambda r: r["size_bytes"])
    alpha_s = small["ip_time_s"] / (2 * (ranks - 1))
    out = []
    for r in rows:
        model = allreduce(r["size_bytes"], ranks, busbw_gbps, alpha_s, "ring").time_s
        bw_term = 2 * (ranks - 1) / ranks * r["size_bytes"] / (busbw_gbps * 1e9)
        err = (r["ip_time_s"] - model) / model
        checked = bw_term >= BANDWIDTH_DOMINATED * model
        out.append({"rate_mbps": rate_mbps, "ranks": ranks, "size_bytes": r["size_bytes"],
                    "measured_s": r["ip_time_s"], "oop_measured_s": r["oop_time_s"], "model_s": model,
                    "alpha_s": alpha_s, "link_busbw_gbps": busbw_gbps, "busbw_gbps": r["ip_busbw_gbps"],
                    "error": err, "checked": checked, "agrees": (abs(err) <= TOLERANCE) if checked else None,
                    "wrong": r["oop_wrong"] + r["ip_wrong"], "cores_busy": r["cores_busy"],
                    "machine_busy": r["machine_busy"]})
    return out


def run_one(rate_mbps: float, ranks: int, sizes: list[int], iters: int, warmup: int) -> dict[str, Any]:
    from fedbw.collectives.allreduce import measure_allreduce

    with NetnsLinks(ranks, rate_mbps) as links:
        m = measure_allreduce("gloo", [ranks], sizes, "float32", iters=iters, warmup=warmup, fabric="eth-1g",
                              placement=NetnsPlacement(links), timeout_s=900.0)
    (table,) = m.tables
    rows = [r.to_json() for r in table.rows]
    return {"rate_mbps": rate_mbps, "ranks": ranks, "rows": compare(rate_mbps, ranks, rows),
            "fit": {"alpha_us": table.fit.alpha_s * 1e6, "busbw_gbps": table.fit.busbw_gbps,
                    "rms_residual": table.fit.rms_residual},
            "bound": table.verdict.bound, "bound_note": table.verdict.note, "wall_s": m.wall_s}


COLUMNS = [("rate_mbps", "rate_Mbps", "{:g}"), ("ranks", "ranks", "{}"), ("size_bytes", "size_B", "{:,}"),
           ("measured_s", "measured_ms", "{:.2f}"), ("model_s", "model_ms", "{:.2f}"),
           ("error", "error_%", "{:+.1f}"), ("busbw_gbps", "busbw_GB/s", "{:.4f}"),
           ("link_busbw_gbps", "link_GB/s", "{:.4f}"), ("agrees", "within_10%", "{}"), ("wrong", "#wrong", "{}")]


def _cell(key: str, fmt: str, row: dict[str, Any]) -> str:
    v = row[key]
    if key in ("measured_s", "model_s"):
        v = v * 1e3
    elif key == "error":
        v = v * 100
    elif key == "agrees":
        return "-" if v is None else ("yes" if v else "NO")
    return fmt.format(v)


def print_table(results: list[dict[str, Any]]) -> None:
    widths = [max(len(h), 11) for _, h, _ in COLUMNS]
    print("  ".join(f"{h:>{w}}" for (_, h, _), w in zip(COLUMNS, widths)))
    for res in results:
        for row in res["rows"]:
            print("  ".join(f"{_cell(k, f, row):>{w}}" for (k, _, f), w in zip(COLUMNS, widths)))
        print(f"# {res['rate_mbps']:g} Mbit/s × {res['ranks']} ranks: fit α = {res['fit']['alpha_us']:.0f} µs, "
              f"busbw {res['fit']['busbw_gbps']:.4f} GB/s; {res['bound_note']}")


def write_docs() -> None:
    """Regenerate docs/'s tables from benchmarks/results/ (what `fedbw docs` does): the page shows the
    results at the default ``--out``."""
    from fedbw.report.docs import regenerate

    regenerate(ROOT)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rates", default="100,1000,2000", help="link rates in Mbit/s (each in SIZES)")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="2 ranks, 100 and 1000 Mbit/s, 3 iterations")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--write-docs", action="store_true", help="also rewrite the table in docs/datacenter.md")
    ap.add_argument("--docs-only", action="store_true", help="only rewrite the docs table from --out")
    args = ap.parse_args()
    out = Path(args.out)
    if args.docs_only:
        write_docs()
        print(f"# wrote the table in {DOC} from {out}")
        return 0
    skip = unavailable()
    if skip:
        print(f"# namespace check skipped: {skip}")
        return 0
    rates = [100.0, 1000.0] if args.quick else [float(r) for r in args.rates.split(",")]
    ranks = [2] if args.quick else [int(r) for r in args.ranks.split(",")]
    iters = 3 if args.quick else args.iters
    bad = [r for r in rates if int(r) not in SIZES]
    if bad:
        raise SystemExit(f"--rates: no size list for {bad}; choose from {sorted(SIZES)}")
    from fedbw.collectives.machine import machine_info

    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    info = machine_info("cpu")
    print(f"# fedbw AllReduce on rate-limited veth links  {started}  {info['cpu']}  {info['usable_cores']} cores  "
          f"torch {info['packages'].get('torch')}  {iters} iterations after {args.warmup} warm-up, float32, gloo")
    print(f"# model: ring, t = 2(p-1)·α + 2(p-1)/p·n/B; B = rate × {ETH_EFFICIENCY:.4f} (the catalog's Ethernet "
          f"TCP efficiency); α from the 1 KiB row; checked rows: bandwidth term ≥ 90 % of the model")
    results = []
    for rate in rates:
        for p in ranks:
            results.append(run_one(rate, p, SIZES[int(rate)], iters, args.warmup))
    print_table(results)
    checked = [r for res in results for r in res["rows"] if r["checked"]]
    agree = sum(1 for r in checked if r["agrees"])
    print(f"# {agree} of {len(checked)} bandwidth-dominated rows within ±{100 * TOLERANCE:.0f} % of the model")
    data = {"started": started, "machine": info, "iters": iters, "warmup": args.warmup, "tolerance": TOLERANCE,
            "eth_efficiency": ETH_EFFICIENCY, "queue_bytes": QUEUE_BYTES, "burst_s": BURST_S,
            "results": results, "loadavg_end": list(os.getloadavg())}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"# wrote {out}")
    if args.write_docs:
        write_docs()
        print(f"# wrote the table in {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
