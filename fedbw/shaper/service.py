"""The shaper as a process of its own: ``python -m fedbw.shaper.service SPEC.json``.

Why a process: in a thread of the measuring program the shaper shares one interpreter (and its GIL)
with log readers and bookkeeping, so a busy moment there delays bytes that a real link would have
carried. As its own process it has a loop and an interpreter to itself; what it measured comes back
in files: the ledger (per connection, :mod:`fedbw.shaper.ledger`) and the link series
(:mod:`fedbw.shaper.series`), sampled on the same loop that moves the bytes.

The spec file (:func:`write_spec`) holds the routes, the server's shared link and where to write.
Once every port is bound the process prints one line ``READY {"ports": {client: port}}``; it stops
cleanly on SIGTERM or SIGINT (last sample taken, files closed) and exits 0; on SIGUSR1 every traced link
starts its trace again from that moment (:mod:`fedbw.shaper.anchor`) and it prints ``ANCHORED t``; a bad spec or a port it
cannot bind ends it with exit code 2 and one line saying why.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedbw.shaper.anchor import ANCHOR_SIGNAL
from fedbw.shaper.errors import ShaperError
from fedbw.shaper.link import ClientRoute, LinkSpec
from fedbw.shaper.proxy import Shaper
from fedbw.shaper.series import DEFAULT_INTERVAL_S, SeriesSampler
from fedbw.shaper.thread import new_event_loop

READY = "READY"
#: What the process prints when SIGUSR1 started its traces again, with that moment's perf_counter.
ANCHORED = "ANCHORED"


def write_spec(path: str | Path, routes: Sequence[ClientRoute], *, shared_link: LinkSpec | None = None,
               ledger: str | Path | None = None, series: str | Path | None = None,
               interval_s: float = DEFAULT_INTERVAL_S, quantum_s: float | None = None,
               use_uvloop: bool | None = None) -> Path:
    """The spec file a shaper process reads."""
    spec = {"routes": [r.to_dict() for r in routes],
            "shared_link": None if shared_link is None else shared_link.to_dict(),
            "ledger": None if ledger is None else str(ledger), "series": None if series is None else str(series),
            "interval_s": interval_s, "quantum_s": quantum_s, "use_uvloop": use_uvloop}
    path = Path(path)
    path.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    return path


def parse_ready(line: str) -> dict[str, int]:
    """The client → port map from the service's READY line."""
    if not line.startswith(READY + " "):
        raise ShaperError(f"not a shaper READY line: {line!r}")
    return {str(k): int(v) for k, v in json.loads(line[len(READY) + 1:])["ports"].items()}


def read_spec(path: str | Path) -> dict[str, Any]:
    try:
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ShaperError(f"cannot read the shaper spec {path}: {exc}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("routes"), list):
        raise ShaperError(f"{path}: a shaper spec needs a list of routes")
    spec["routes"] = [ClientRoute.from_dict(r) for r in spec["routes"]]
    if spec.get("shared_link") is not None:
        spec["shared_link"] = LinkSpec.from_dict(spec["shared_link"])
    return spec


async def serve(spec: dict[str, Any], stop: asyncio.Event) -> dict[str, Any]:
    """Run the shaper (and its series sampler) until ``stop`` is set; returns the final snapshot."""
    kwargs: dict[str, Any] = {"ledger_path": spec.get("ledger"), "shared_link": spec.get("shared_link")}
    if spec.get("quantum_s"):
        kwargs["quantum_s"] = float(spec["quantum_s"])
    shaper = Shaper(spec["routes"], **kwargs)
    async with shaper:
        sampler = None
        if spec.get("series"):
            sampler = SeriesSampler(shaper.ledger, spec["series"], float(spec.get("interval_s") or DEFAULT_INTERVAL_S))
            sampler.start()

        def anchor() -> None:
            t0 = shaper.anchor_traces()
            print(f"{ANCHORED} {t0!r}", flush=True)

        # before READY: whoever reads READY may signal at once, and SIGUSR1 unhandled ends the process
        asyncio.get_running_loop().add_signal_handler(ANCHOR_SIGNAL, anchor)
        print(READY, json.dumps({"ports": shaper.ports}), flush=True)
        try:
            await stop.wait()
        finally:
            if sampler is not None:
                await sampler.stop()
    return shaper.snapshot()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m fedbw.shaper.service SPEC.json", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        spec = read_spec(args[0])
        loop = new_event_loop(spec.get("use_uvloop"))
    except ShaperError as exc:
        print(f"fedbw shaper: {exc}", file=sys.stderr, flush=True)
        return 2
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        loop.run_until_complete(serve(spec, stop))
    except (ShaperError, OSError) as exc:
        print(f"fedbw shaper: {exc}", file=sys.stderr, flush=True)
        return 2
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
