"""The catalog stores sizes so `estimate` stays instant; these tests rebuild every module to prove them."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from fedbw.catalog import MODELS, get_model
from fedbw.catalog.models import parse_count
from fedbw.errors import CatalogError
from fedbw.models import MODEL_BUILDERS, build_model

TRAINABLE = [name for name, spec in MODELS.items() if spec.trainable_here]


def test_every_trainable_model_has_a_module():
    assert set(TRAINABLE) == set(MODEL_BUILDERS)


@pytest.mark.parametrize("name", TRAINABLE)
def test_params_and_arrays_match_real_modules(name):
    model = build_model(name, "meta")
    params = list(model.parameters())
    assert sum(p.numel() for p in params) == MODELS[name].params
    assert len(params) == MODELS[name].num_arrays
    # fedbw/catalog/model-arrays.json; regenerate: {name: [p.numel() for p in build_model(name, "meta").parameters()]}
    assert MODELS[name].array_params == tuple(p.numel() for p in params)
    assert sum(MODELS[name].array_shares) == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["mlp", "small-cnn", "resnet18", "resnet50", "vit-b-16"])
def test_forward_flops_match_flop_counter(name):
    spec = MODELS[name]
    model = build_model(name, "meta")
    with torch.device("meta"):
        x = torch.empty((1, *spec.input_shape))
        with FlopCounterMode(display=False) as counter:
            model(x)
    assert counter.get_total_flops() == pytest.approx(spec.forward_flops, rel=1e-6)


def test_published_reference_counts():
    # torchvision / the GPT-2 release publish these exact numbers
    assert MODELS["resnet18"].params == 11_689_512
    assert MODELS["resnet50"].params == 25_557_032
    assert MODELS["vit-b-16"].params == 86_567_656
    assert MODELS["gpt2-small"].params == 124_439_808


def test_params_syntax():
    assert get_model("params=7B").params == 7_000_000_000
    assert get_model("params=25.6M").params == 25_600_000
    assert get_model("params=1e6").params == 1_000_000
    for bad in ("params=abc", "params=-5", "params=0"):
        with pytest.raises(CatalogError):
            get_model(bad)
    assert parse_count("1_000") == 1000


def test_unknown_model_suggests():
    with pytest.raises(CatalogError, match="resnet50"):
        get_model("resnet5")
