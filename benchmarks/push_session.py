"""Flower 1.42's object-push session against a reply that is one large object, measured on real sockets.

Why: the SuperLink keeps a SuperNode's object-push session for 180 s after its last stored object
(``OBJECT_PUSH_SESSION_TTL_SECONDS``, flwr/supercore/corestate), and refuses an object that arrives later.
SecAgg+'s masked vector travels as one ConfigRecord, one object (docs/privacy.md), so an uplink slow enough
that the masked vector alone takes longer than that would lose every SecAgg+ reply in a real deployment,
where estimate and simulate would time a long round. On 2026-12-06 a validation trial lost every masked
upload at dilation 7, where the session was not yet dilated; this checks the rule undilated, on Flower's
own clock: emulate (Flower's Deployment Engine through fedbw's shaper, dilation 1) runs ResNet-18
(synthetic compute) with stock SecAgg+, 3 clients, one round, on uplinks whose rate puts the masked vector's time on the link at
each given share of the session's lifetime (default 0.8 and 1.2), and records for every masked-vector
upload its bytes and seconds on the link (the shaper's ledger) and whether Flower answered with an error.

Nothing here comes from the model: the rates are chosen from the payload's size, and the verdict is what
the run measured. Writes benchmarks/results/push-session.json; docs/emulate.md's table is generated from it.

Usage: .venv/bin/python benchmarks/push_session.py [--shares 0.8,1.2]     (about 5 minutes a share)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
for _k, _v in (("FLWR_TELEMETRY_ENABLED", "0"), ("FLWR_DISABLE_UPDATE_CHECK", "1"), ("RAY_USAGE_STATS_ENABLED", "0")):
    os.environ.setdefault(_k, _v)

OUT = ROOT / "benchmarks" / "results" / "push-session.json"
RUNS = ROOT / "runs" / "push-session"
STAGE = "collect_masked_vectors"
CLIENTS = 3
#: ResNet-18 (93.6 MB masked, stock SecAgg+): its uplinks run at megabits, where a SuperNode's heartbeats still
#: pass beside the upload. A small model would need kilobit uplinks, where one buffered read holds the link for
#: tens of seconds and the heartbeats time out first (tried with the MLP at 4.4 kbps on 2026-12-06: the
#: SuperLink declared a node dead before its upload ended), which tests something else.
MODEL = "resnet18"
TIMEOUT_S = 900.0


def session_ttl_s() -> float:
    """The session's lifetime as the installed Flower sets it (read from its source, not assumed)."""
    src = (Path(__import__("flwr").__file__).parent / "supercore" / "constant.py").read_text(encoding="utf-8")
    return float(re.search(r"OBJECT_PUSH_SESSION_TTL_SECONDS = (\d+)", src).group(1))


def masked_bytes() -> float:
    """The masked-vector reply's bytes with stock SecAgg+ (the payload's size, only to pick rates)."""
    from fedbw.config import config_from_dict
    from fedbw.plan import build_plan

    plan = build_plan(config_from_dict(config(1.0)))
    return next(ex.bytes_up for ex in plan.predicted_exchanges(1) if ex.stage == STAGE)


def config(up_mbps: float) -> dict[str, Any]:
    return {"name": f"push-session-{up_mbps:.5f}", "engine": "emulate", "seed": 0, "output_dir": str(RUNS),
            "model": {"name": MODEL},
            "clients": {"total": CLIENTS, "per_round": CLIENTS, "compute": "synthetic", "device_profile": "desktop-gpu"},
            "training": {"rounds": 1},
            "network": {"profile": "home-80",
                        "overrides": [{"client": c, "up_mbps": up_mbps} for c in range(CLIENTS)]},
            "privacy": {"secagg": {"enabled": True}},
            # a run whose replies are lost may wait for them: stop it well after the slowest upload would end
            "emulate": {"dilation": 1, "timeout_s": TIMEOUT_S}}


def run_case(share: float, ttl_s: float, nbytes: float) -> dict[str, Any]:
    """One emulation whose masked vector takes about ``share`` × the session's lifetime on the link."""
    from fedbw.config import config_from_dict
    from fedbw.errors import FedbwError
    from fedbw.runner import run_experiment

    up_mbps = nbytes * 8 / (share * ttl_s) / 1e6
    case: dict[str, Any] = {"share": share, "up_mbps": up_mbps, "started_utc": _now()}
    t0 = time.perf_counter()
    try:
        result = run_experiment(config_from_dict(config(up_mbps)))
        case["run_dir"] = str(Path(result.run_dir).relative_to(ROOT))
    except FedbwError as exc:  # a run that lost its replies may end in an error: what it measured is kept
        case["error"] = str(exc).splitlines()[0]
        runs = sorted(RUNS.glob(f"push-session-{up_mbps:.5f}*"))
        case["run_dir"] = str(runs[-1].relative_to(ROOT)) if runs else None
    case["wall_s"] = time.perf_counter() - t0
    return measure(case)


def measure(case: dict[str, Any]) -> dict[str, Any]:
    """``case`` with what its run directory measured: per client, the masked vector's upload as the shaper
    delivered it (its largest burst on the uplink: bytes and first byte in → last byte out, at the receiver's
    side; emulate attributes no transfer to a reply Flower refused, so the burst is read from the link series)
    and whether Flower answered the reply with an error; and any other message's error."""
    from fedbw.engines.emulate.run import messages_by_key
    from fedbw.shaper.series import SeriesReader

    run_dir = ROOT / case["run_dir"] if case.get("run_dir") else None
    messages = messages_by_key(run_dir) if run_dir else {}
    series_file = run_dir / "emulate-logs" / "link-series.jsonl" if run_dir else None
    series = SeriesReader(series_file).read() if series_file and series_file.is_file() else None
    uploads = []
    for (_, cid, stage), m in sorted(messages.items()):
        if stage != STAGE:
            continue
        nbytes, seconds = largest_burst(series.series[(str(cid), "up")]) if series else (0, 0.0)
        uploads.append({"client": cid, "bytes_up": nbytes, "t_up_s": seconds, "lost": m.error is not None,
                        "error": m.error.splitlines()[0] if m.error else None})
    case["uploads"] = uploads
    case["other_errors"] = [f"client {m.client_id}, {stage}: {m.error.splitlines()[0]}"
                            for (_, _, stage), m in sorted(messages.items()) if stage != STAGE and m.error]
    return case


#: A pause this long on the uplink ends a burst (the masked vector's bytes flow without one).
BURST_PAUSE_S = 1.0


def largest_burst(samples: list[Any]) -> tuple[int, float]:
    """The largest run of bytes delivered without a pause of BURST_PAUSE_S: (bytes, seconds from the sample
    before its first byte to its last byte out)."""
    best, start, start_bytes, last_t, last_bytes = (0, 0.0), None, 0, None, 0
    prev = samples[0] if samples else None
    for s in samples[1:]:
        if s.bytes_out > prev.bytes_out:
            if start is None or (last_t is not None and s.t_s - last_t > BURST_PAUSE_S):
                start, start_bytes = prev.t_s, prev.bytes_out
            last_t, last_bytes = s.last_out_s or s.t_s, s.bytes_out
            if last_bytes - start_bytes > best[0]:
                best = (last_bytes - start_bytes, last_t - start)
        prev = s
    return best


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def main(argv: list[str] | None = None) -> None:
    from fedbw.report.push_session_table import push_session_markdown

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shares", default="0.8,1.2",
                    help="the masked vector's time on the link as shares of the session's lifetime")
    ap.add_argument("--reread", action="store_true",
                    help="measure the cases of the written JSON again from their run directories (no emulation)")
    args = ap.parse_args(argv)
    if args.reread:
        if not OUT.is_file():
            sys.exit(f"push_session: --reread needs {OUT.relative_to(ROOT)}; run without it first")
        data = json.loads(OUT.read_text(encoding="utf-8"))
        data["cases"] = [measure(c) for c in data["cases"]]
        data["reread_utc"] = _now()
        OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(push_session_markdown(data))
        return
    try:
        shares = [float(s) for s in args.shares.split(",")]
    except ValueError:
        sys.exit(f"push_session: --shares takes numbers separated by commas, not {args.shares!r}")
    if not shares or any(s <= 0 for s in shares):
        sys.exit("push_session: every share must be > 0")
    ttl, nbytes = session_ttl_s(), masked_bytes()
    data = {"made_utc": _now(), "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                                            f"Python {platform.python_version()}",
            "flwr": metadata.version("flwr"), "session_ttl_s": ttl, "masked_reply_bytes": nbytes,
            "model": MODEL, "clients": CLIENTS, "dilation": 1,
            "cases": []}
    try:
        for share in shares:
            data["cases"].append(run_case(share, ttl, nbytes))
    except KeyboardInterrupt:
        sys.exit(f"push_session: interrupted; nothing written (finished cases: {len(data['cases'])})")
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(push_session_markdown(data))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
