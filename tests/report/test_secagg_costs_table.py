"""docs/privacy.md's SecAgg+ cost block renders the fitted primitives, the combine's forms with their held-out
errors, and the stage model against real rounds, from secagg-costs.json."""

from __future__ import annotations

import dataclasses

from fedbw.netmodel.secagg_cost import STAGES, SecAggCostConstants
from fedbw.netmodel.version import model_version
from fedbw.report.secagg_costs_table import secagg_costs_markdown


def _data() -> dict:
    consts = SecAggCostConstants(**{f.name: 0.001 for f in dataclasses.fields(SecAggCostConstants)
                                    if f.type in ("float", float)}, machine="a VM", measured="2026-12-06T02:00:00Z")
    forms = {"combine_seed": {"sizes": [2, 3, 4], "a·m + b·m² (the model's)": [0.01, -0.03, 0.02],
                              "c + b·m² (before 2026-12-06)": [0.5, 0.1, -0.2]},
             "combine_key": {"sizes": [2, 4, 6], "a·m + b·m² (the model's)": [0.1, 0.0, -0.02],
                             "c + b·m² (before 2026-12-06)": [1.2, -0.05, 0.06]}}
    stages = dict.fromkeys(STAGES, 0.0125)
    rounds = [{"clients": 5, "shares": 3, "vector_len": 100_000, "dropped": 1, "client_measured_s": stages,
               "client_model_s": stages, "server_measured_s": stages,
               "server_model_s": {**stages, "unmask": 0.0375}}]
    return {"constants": consts.to_json(), "combine_forms": forms, "rounds": rounds, "repeats": 5,
            "made_by": {"model_version": model_version(), "calibration": "fitted in this run"}}


def test_the_block_shows_the_primitives_the_forms_and_the_rounds() -> None:
    text = secagg_costs_markdown(_data())
    assert "| combine a dropped client's key from m shares | 1 ms × m + 1 ms × m² |" in text
    assert "| a·m + b·m² (the model's) | 2.0 % (3 %) | 2.0 % (10 %) |" in text  # median |error| (largest)
    assert "| c + b·m² (before 2026-12-06) | 20.0 % (50 %) | 6.0 % (120 %) |" in text
    assert "| 5 | 3 | 100,000 | 1 | 12.5 / 12.5 | 12.5 / 12.5 | 12.5 / 12.5 | 12.5 / 37.5 |" in text
    assert "measured 2026-12-06T02:00:00Z on a VM" in text
