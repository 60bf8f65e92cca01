"""simulate with a round policy (issue 32.2): the ServerApp lays its round on the same virtual clock as the
engine and leaves out the replies that clock calls late, so the updates it aggregated and the clients the
records call late are the same clients."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedbw.config import config_from_dict

#: Clients 0 and 1 download at 0.5 Mbps: the small CNN's 0.55 MB take ≈ 9 s, so their replies are announced
#: long after the others' (a slow download is what a closing poll can cut; a slow upload already announced
#: is pulled behind, as in Flower).
SLOW = [{"client": 0, "down_mbps": 0.5}, {"client": 1, "down_mbps": 0.5}]


def _run(tmp_path: Path, **round_keys: object):
    from fedbw.runner import run_experiment

    cfg = config_from_dict({"name": "policy", "engine": "simulate", "device": "cpu", "seed": 0,
                            "output_dir": str(tmp_path), "model": {"name": "small-cnn"},
                            "clients": {"total": 6, "per_round": 3, "compute": "synthetic"},
                            "training": {"rounds": 3}, "network": {"profile": "home-80", "overrides": SLOW},
                            "round": round_keys})
    return run_experiment(cfg)


def _late_events(run_dir: Path) -> dict[int, list[int]]:
    out = {}
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev["event"] == "late":
            out[ev["round"]] = ev["clients"]
    return out


@pytest.mark.slow
def test_the_serverapp_leaves_out_exactly_the_clients_the_records_call_late(tmp_path: Path) -> None:
    res = _run(tmp_path, over_select=2.0)  # 6 sampled, the first 3 replies close the stage
    assert all(r.num_clients == 6 for r in res.rounds)
    late_records = {r.round: sorted(c.client_id for c in res.clients if c.round == r.round and c.late)
                    for r in res.rounds}
    late_events = _late_events(res.run_dir)
    assert {r: c for r, c in late_records.items() if c} == late_events
    assert set().union(*late_events.values()) >= {0, 1}  # the slow downloads are late
    for r in res.rounds:
        assert r.replies == 6 - len(late_records[r.round]) and not r.abandoned
        assert r.wasted_bytes_up == pytest.approx(sum(c.bytes_up for c in res.clients
                                                      if c.round == r.round and c.late))
