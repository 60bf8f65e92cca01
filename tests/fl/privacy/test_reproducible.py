"""Same config and seed, same results: sampling, partitions, synthetic data, DP noise and SecAgg+'s
stochastic rounding all come from generators derived from the seed (fedbw.privacy.randomness).

What is and is not bit-identical, and why:

* estimate: every record field but ``run_id`` and ``wall_time_s`` (how long this machine took);
* fedbw's apps on the loopback grid: every value the apps log — losses, accuracies, ε, the privacy
  record, every message's byte count — but times (measured on the wall clock). Node ids are seeded there;
* the simulate engine: losses, accuracies, ε, privacy records, examples and train losses per client.
  Not bytes: Flower's Simulation Engine gives nodes random 64-bit ids, which appear in SecAgg+'s control
  messages, and message ids vary, so sizes move by a few bytes per message (tests/test_golden.py allows
  for it) — and not times, which come from those bytes and from compute measured on the wall clock.
"""

from __future__ import annotations

import json

import pytest

from fedbw.config import config_from_dict
from fedbw.runner import run_experiment

from .fedbw_loopback import ends, run_apps

#: Event fields measured on the wall clock (or process ids): they differ between any two runs.
CLOCK = {"t", "t_sent", "t_pushed", "t_pull", "t_replied", "pulled_with", "t_recv", "t_reply", "t_app_s", "compute_s",
         "wall_time_s", "pid"}

DP_LOCAL = {"dp": {"enabled": True, "mode": "local", "local_epsilon": 8.0, "clipping_norm": 2.0}}
SECAGG_DP = {"secagg": {"enabled": True, "mode": "packed"},
             "dp": {"enabled": True, "mode": "central-client-fixed", "noise_multiplier": 0.3, "clipping_norm": 5.0}}


def _records(run_dir):
    lines = (run_dir / "records.jsonl").read_text().splitlines()[1:]
    out = []
    for line in lines:
        rec = json.loads(line)
        rec.pop("run_id", None)
        rec.pop("wall_time_s", None)
        out.append(rec)
    return out


@pytest.mark.parametrize("privacy", [DP_LOCAL, SECAGG_DP], ids=["dp-local", "secagg-packed+dp"])
def test_estimate_records_are_bit_identical(tmp_path, privacy):
    base = {"engine": "estimate", "seed": 5, "clients": {"total": 8, "per_round": 4}, "training": {"rounds": 3},
            "privacy": privacy}
    a = run_experiment(config_from_dict({**base, "output_dir": str(tmp_path / "a")}))
    b = run_experiment(config_from_dict({**base, "output_dir": str(tmp_path / "b")}))
    ra, rb = _records(a.run_dir), _records(b.run_dir)
    assert ra == rb and any(r.get("epsilon") for r in ra)


def _apps_cfg(privacy, randomness="seed"):
    return config_from_dict({"engine": "simulate", "device": "cpu", "seed": 4,
                             "clients": {"total": 4, "per_round": 3}, "training": {"rounds": 2},
                             "privacy": {**privacy, "randomness": randomness}})


def _values(events):
    """Every logged value but clock readings; replies in (round, stage, client) order, since the server
    logs them as they arrive (the order of message ids in a set, which Python's string hashing varies)."""
    kept = [{k: v for k, v in e.items() if k not in CLOCK} for e in events]
    others = [e for e in kept if e["event"] != "message"]
    replies = sorted((e for e in kept if e["event"] == "message"), key=lambda e: (e["round"], e["stage"], e["client_id"]))
    return others, replies


@pytest.mark.slow  # ≈ 20 s: real training, twice per config
@pytest.mark.parametrize("privacy", [DP_LOCAL, SECAGG_DP], ids=["dp-local", "secagg-packed+dp"])
def test_the_apps_log_bit_identical_values(tmp_path, privacy):
    _, _, a = run_apps(tmp_path / "a", _apps_cfg(privacy))
    _, _, b = run_apps(tmp_path / "b", _apps_cfg(privacy))
    assert _values(a) == _values(b)
    assert all(e["loss"] is not None and e["epsilon"] is not None for e in ends(a))
    # the check can fail: from OS entropy the noise (local DP) or the rounding (SecAgg+) differs
    _, _, c = run_apps(tmp_path / "c", _apps_cfg(privacy, randomness="os"))
    assert [e["loss"] for e in ends(c)] != [e["loss"] for e in ends(a)]


@pytest.mark.slow  # ≈ 60 s: Flower's Simulation Engine (Ray), twice
def test_simulate_gives_identical_values_and_nearly_identical_bytes(tmp_path):
    base = {"engine": "simulate", "device": "cpu", "seed": 4, "clients": {"total": 3, "per_round": 3},
            "training": {"rounds": 2}, "privacy": SECAGG_DP}
    runs = [run_experiment(config_from_dict({**base, "output_dir": str(tmp_path / x)})) for x in "ab"]
    (ca, ra), (cb, rb) = [(r.clients, r.rounds) for r in runs]
    assert [(r.loss, r.accuracy, r.epsilon, r.privacy) for r in ra] == [(r.loss, r.accuracy, r.epsilon, r.privacy)
                                                                        for r in rb]
    assert ra[-1].loss is not None and ra[-1].epsilon is not None
    def key(c):
        return c.round, c.client_id

    assert ([(c.round, c.client_id, c.num_examples, c.train_loss) for c in sorted(ca, key=key)]
            == [(c.round, c.client_id, c.num_examples, c.train_loss) for c in sorted(cb, key=key)])
    for x, y in zip(sorted(ca, key=key), sorted(cb, key=key)):
        assert abs(x.bytes_up - y.bytes_up) <= 64 * len(x.stages)  # node ids and message ids: a few bytes
