"""The framework-parts tables: the model's parts cut where emulate's are, and the deployment breakdown."""

from __future__ import annotations

import pytest

from fedbw.flower_protocol import FRAMEWORK_PARTS
from fedbw.report.framework_parts import as_emulate_times, deployment_parts_table, framework_parts_table

MODEL_PARTS = {"supernode_poll_s": 1.0, "clientapp_start_s": 2.5, "app_other_s": 0.0, "reply_pickup_s": 0.25,
               "serverapp_poll_s": 1.5, "server_push_s": 0.75, "server_pull_s": 0.7, "server_aggregate_s": 0.02}


def test_the_models_push_joins_the_supernode_wait_as_emulate_times_it() -> None:
    cut = as_emulate_times(MODEL_PARTS)
    assert list(cut) == list(FRAMEWORK_PARTS)
    assert cut["supernode_poll_s"] == pytest.approx(1.75)
    # the pull is already in the ServerApp's poll on both sides: not added again
    assert cut["serverapp_poll_s"] == 1.5 and cut["clientapp_start_s"] == 2.5
    assert as_emulate_times({}) == dict.fromkeys(FRAMEWORK_PARTS, 0.0)


def _case(model_parts: dict[str, float], emulate_parts: dict[str, float]) -> dict:
    return {"case": "resnet18", "clients": 2, "engines": {
        "estimate": {"steady_comm_s": 10.0, "steady_parts_s": model_parts},
        "emulate": {"steady_comm_s": 10.5, "steady_parts_s": emulate_parts}}}


def test_deployment_parts_table_gives_each_part_and_its_difference() -> None:
    emulate = {"supernode_poll_s": 2.0, "clientapp_start_s": 3.5, "app_other_s": 0.25, "reply_pickup_s": 0.25,
               "serverapp_poll_s": 1.0}
    text = deployment_parts_table([_case(MODEL_PARTS, emulate)])
    row = next(line for line in text.splitlines() if line.startswith("| resnet18"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:2] == ["resnet18", "2"]
    assert cells[2].endswith("(+0.50 s)")  # comm 10.0 → 10.5
    assert cells[3].endswith("(+0.25 s)")  # push + pull wait: 1.75 → 2.0
    assert cells[4].endswith("(+1.00 s)") and cells[7].endswith("(-0.50 s)")
    assert "push + SuperNode pull wait: estimate / emulate" in text
    assert "aggregation (at most 20.00 ms here)" in text  # from the model's server_aggregate_s, not typed


def test_cases_without_recorded_parts_give_no_table() -> None:
    assert deployment_parts_table([_case({}, {"supernode_poll_s": 1.0})]) == ""
    assert deployment_parts_table([]) == ""


def _privacy_row(study_parts: dict[str, float]) -> dict:
    return {"variant": "plain", "simulate_parts_s": study_parts,
            "emulate_parts_s": {"supernode_poll_s": 2.0, "clientapp_start_s": 2.5, "app_other_s": 0.0,
                                "reply_pickup_s": 0.25, "serverapp_poll_s": 1.5}}


def test_privacy_parts_fold_the_push_where_the_study_kept_it() -> None:
    text = framework_parts_table([_privacy_row(MODEL_PARTS)])
    assert "push + SuperNode pull wait: study / emulate" in text and "(+0.25 s)" in text  # 1.75 → 2.0
    # rows recorded with the five shared parts only: the table says the push is missing on the study's side
    old = framework_parts_table([_privacy_row({k: MODEL_PARTS[k] for k in FRAMEWORK_PARTS})])
    assert "recorded without the study's push" in old and "(+1.00 s)" in old  # 1.0 → 2.0
