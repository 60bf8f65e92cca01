"""privacy.secagg.num_shares as a rule of the cohort ("log2", "all"): resolved once, used by the plan's bytes
and crypto and by Flower's workflow, and checked against the threshold at the config's cohort."""

from __future__ import annotations

import pytest

from fedbw.config import config_from_dict
from fedbw.errors import ConfigError
from fedbw.plan import build_plan


def _cfg(shares: object, per_round: int = 100, threshold: int = 2) -> dict:
    return {"name": "s", "engine": "estimate", "clients": {"total": per_round, "per_round": per_round},
            "privacy": {"secagg": {"enabled": True, "num_shares": shares, "reconstruction_threshold": threshold}}}


def test_a_share_rule_resolves_at_the_cohort_and_reaches_the_plans_bytes_and_flower() -> None:
    from fedbw.fl.privacy.wiring import build_fit_workflow

    cfg = config_from_dict(_cfg("log2"))
    assert cfg.privacy.secagg.shares(100) == 7 and cfg.privacy.secagg.shares(1000) == 11
    assert config_from_dict(_cfg("all")).privacy.secagg.shares(100) == 100
    plain3 = build_plan(config_from_dict(_cfg(3))).predicted_exchanges(1)
    log2 = build_plan(cfg).predicted_exchanges(1)
    share_keys = next(i for i, ex in enumerate(log2) if ex.stage == "share_keys")
    assert log2[share_keys].bytes_up > plain3[share_keys].bytes_up  # 6 neighbours' shares instead of 2
    assert build_fit_workflow(cfg).num_shares == 7  # Flower gets the resolved count


@pytest.mark.parametrize("shares, per_round, threshold, expected", [
    ("some", 10, 2, "num_shares"),
    ("log2", 10, 3, "reconstruction_threshold (3) must be less than the 3 shares num_shares = 'log2' gives"),
    (4, 10, 2, "must be odd when below clients.per_round"),
])
def test_bad_share_settings_name_the_key(shares: object, per_round: int, threshold: int, expected: str) -> None:
    with pytest.raises(ConfigError) as exc:
        config_from_dict(_cfg(shares, per_round, threshold))
    assert expected in str(exc.value)
