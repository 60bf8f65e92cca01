"""Local training: it learns, parameters round-trip in order, devices resolve."""

import numpy as np
import pytest

from fedbw.config import config_from_dict
from fedbw.fl.data import client_dataset, holdout_dataset
from fedbw.fl.train import (evaluate, get_parameters, parameter_shapes, seeded_model,
                            set_parameters, train)
from fedbw.plan import build_plan


def test_training_reduces_loss_and_reports_compute_time():
    plan = build_plan(config_from_dict({"model": {"name": "mlp"}, "clients": {"total": 2, "per_round": 1}}))
    model = seeded_model("mlp", 0)
    test = holdout_dataset(plan)
    before, _ = evaluate(model, test, device="cpu", tokens=False)
    loss, seen, compute_s = train(model, client_dataset(plan, 0), device="cpu", epochs=3, steps=None,
                                  batch_size=32, learning_rate=0.05, seed=1, tokens=False)
    after, acc = evaluate(model, test, device="cpu", tokens=False)
    assert after < before and acc > 0.5
    assert seen == 3 * plan.clients[0].num_samples and compute_s > 0


def test_local_steps_override_epochs():
    plan = build_plan(config_from_dict({"model": {"name": "mlp"}}))
    _, seen, _ = train(seeded_model("mlp", 0), client_dataset(plan, 0), device="cpu", epochs=5, steps=3,
                       batch_size=8, learning_rate=0.01, seed=0, tokens=False)
    assert seen == 24


def test_parameters_round_trip_and_match_catalog_shapes():
    a, b = seeded_model("small-cnn", 0), seeded_model("small-cnn", 1)
    set_parameters(b, get_parameters(a))
    assert all(np.array_equal(x, y) for x, y in zip(get_parameters(a), get_parameters(b)))
    shapes = parameter_shapes("small-cnn")
    assert [p.shape for p in get_parameters(a)] == shapes
    assert sum(int(np.prod(s)) for s in shapes) == build_plan(config_from_dict({})).model.params
    with pytest.raises(ValueError):
        set_parameters(a, get_parameters(a)[:-1])


def test_a_params_model_sends_what_estimate_predicts() -> None:
    """``params=N`` (synthetic compute) has no zoo module: its arrays are the catalog's layout, N values
    over num_arrays tensors, so emulate and simulate send the bytes and objects estimate predicts."""
    import math

    from fedbw.catalog import get_model
    from fedbw.fl.train import parameter_shapes

    spec = get_model("params=3000001")
    shapes = parameter_shapes("params=3000001")
    assert len(shapes) == spec.num_arrays and sum(s[0] for s in shapes) == 3_000_001
    assert max(s[0] for s in shapes) - min(s[0] for s in shapes) <= 1
    assert parameter_shapes("params=5") == [(1,)] * 5  # fewer values than arrays: one value each
    assert sum(math.prod(s) for s in parameter_shapes("resnet18")) == get_model("resnet18").params
