"""Client partitions and generated data: sizes, determinism, skew, shapes."""

import numpy as np
import pytest

from fedbw.config import config_from_dict
from fedbw.fl.data import client_dataset, is_token_model, holdout_dataset
from fedbw.plan import build_plan


def _plan(**sections):
    return build_plan(config_from_dict(sections))


def test_digits_iid_partitions_are_disjoint_sized_and_held_out():
    plan = _plan(clients={"total": 10, "per_round": 5})
    parts = [client_dataset(plan, c) for c in range(10)]
    assert all(len(p) == plan.clients[c].num_samples for c, p in enumerate(parts))
    flat = np.concatenate([p.x.reshape(len(p), -1) for p in parts])
    assert len(np.unique(flat, axis=0)) > 0.95 * len(flat)  # disjoint slices (digits has a few duplicates)
    test = holdout_dataset(plan)
    assert len(test) == 1797 - int(1797 * 0.8)
    assert parts[0].x.shape[1:] == (1, 8, 8) and parts[0].x.dtype == np.float32
    assert 0.0 <= parts[0].x.min() and parts[0].x.max() <= 1.0


def test_partitions_are_deterministic_in_the_seed():
    a, b = _plan(seed=3), _plan(seed=3)
    assert np.array_equal(client_dataset(a, 2).y, client_dataset(b, 2).y)
    c = _plan(seed=4)
    assert not np.array_equal(client_dataset(a, 2).y, client_dataset(c, 2).y)


def test_dirichlet_small_alpha_skews_label_mix():
    iid = _plan(clients={"total": 10, "per_round": 5})
    skew = _plan(clients={"total": 10, "per_round": 5}, data={"partition": "dirichlet", "dirichlet_alpha": 0.05})

    def dominant_share(plan):
        shares = []
        for c in range(10):
            counts = np.bincount(client_dataset(plan, c).y, minlength=10)
            shares.append(counts.max() / counts.sum())
        return float(np.mean(shares))

    assert dominant_share(skew) > 0.6 > dominant_share(iid)


@pytest.mark.parametrize("model", ["mlp", "small-cnn"])
def test_synthetic_data_has_the_models_shape(model):
    plan = _plan(model={"name": model}, data={"dataset": "synthetic", "samples_per_client": 16})
    d = client_dataset(plan, 1)
    assert d.x.shape == (16, *plan.model.input_shape)
    assert d.y.max() < plan.model.num_classes


def test_synthetic_tokens_for_token_models():
    plan = _plan(model={"name": "gpt2-small"}, clients={"compute": "synthetic"},
                 data={"samples_per_client": 2})
    assert is_token_model(plan)
    d = client_dataset(plan, 0)
    assert d.x.shape == (2, 1024) and d.x.dtype == np.int64
    assert d.x.max() < plan.model.num_classes
