"""With SecAgg+ on, nothing fedbw records or logs on the server side holds one client's unmasked update.

The NumPy fixture app's clients add seeded noise to a zero vector in round 1, so each client's update
is known exactly here (``0.01 · N(0, 1)`` from ``default_rng(partition_id)``, float32). After a
SecAgg+ round through the shaper, every file of the run directory except the client-side logs is
searched for each update: its raw float32 and float64 bytes and the text of single values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedbw.runner import run_app

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
FIXTURE_APP = Path(__file__).resolve().parents[1] / "engines" / "fixtures" / "numpy_app"
CLIENTS, PARAMS = 3, 4096


def client_update(partition_id: int, n: int = PARAMS) -> np.ndarray:
    """What the fixture's client ``partition_id`` sends in round 1 before masking (client_app.py)."""
    p = np.zeros(n, dtype=np.float32)
    rng = np.random.default_rng(partition_id)
    return p + 0.01 * rng.standard_normal(p.shape).astype(p.dtype)


def needles(update: np.ndarray) -> list[bytes]:
    """How an update could sit in a file: raw bytes (float32, float64) and the text of single values."""
    mid = len(update) // 2
    raw32 = update[mid:mid + 16].tobytes()
    raw64 = update[mid:mid + 8].astype(np.float64).tobytes()
    big = [float(v) for v in update[mid:mid + 64] if abs(v) > 0.005][:3]
    texts = [repr(np.float32(v)).encode() for v in big] + [repr(float(np.float32(v))).encode() for v in big]
    return [raw32, raw64, *{t.replace(b"np.float32(", b"").rstrip(b")") for t in texts}]


def holders(root: Path, update: np.ndarray) -> list[str]:
    """Server-side files under ``root`` (every file but the SuperNodes' own logs) holding ``update``."""
    found = []
    probes = needles(update)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.name.startswith("client-"):
            continue  # a client's own log may hold what the client itself computed
        data = path.read_bytes()
        if any(n in data for n in probes):
            found.append(str(path.relative_to(root)))
    return found


def test_no_server_side_file_holds_a_clients_unmasked_update(tmp_path: Path, reliability) -> None:
    out = tmp_path / "run"
    run = run_app(FIXTURE_APP, CLIENTS, "home-80", engine="emulate", rounds=1, out_dir=out,
                  run_config=[f"min-clients={CLIENTS}", f"num-params={PARAMS}", "secagg=true",
                              "secagg-timeout-s=30.0"], timeout_s=900)
    assert "Secure aggregation completed" in run.result.server_log
    files = [p for p in out.rglob("*") if p.is_file() and not p.name.startswith("client-")]
    assert any(p.name == "serverapp.log" for p in files) and any(p.name == "superlink.log" for p in files)
    leaks = {cid: holders(out, client_update(cid)) for cid in range(CLIENTS)}
    assert leaks == {cid: [] for cid in range(CLIENTS)}
    # the search finds an update where one is written (here: into a planted file)
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "server.log").write_bytes(b"update " + client_update(1).tobytes())
    (planted / "values.txt").write_text(", ".join(repr(float(v)) for v in client_update(2)))
    assert holders(planted, client_update(1)) == ["server.log"] and holders(planted, client_update(2)) == ["values.txt"]
    reliability.area = "security"
    reliability.tried = (f"SecAgg+ round, {CLIENTS} clients × {PARAMS} values: every server-side record and log "
                         "searched for each client's unmasked update (raw float32/float64 bytes, printed values)")
    reliability.kept = "no client's update found in any of them (the same search finds a planted one)"
    reliability.measure(files_searched=len(files))
