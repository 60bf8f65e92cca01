"""Models by name, with parameter counts and forward FLOPs measured from real torch modules.

fedbw federates trainable parameters; BatchNorm statistics stay local, as in FedBN. The numbers are stored (importing torch costs seconds and `estimate` must answer instantly) and
tests/catalog/test_models.py rebuilds every zoo module on the meta device to prove they still match.
LLM entries have no module here: their sizes are the published parameter counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from fedbw.catalog._lookup import lookup
from fedbw.errors import CatalogError


@dataclass(frozen=True)
class ModelSpec:
    name: str
    params: int
    forward_flops: float  #: per sample at ``input_shape`` (FlopCounterMode, 2 FLOPs per MAC)
    input_shape: tuple[int, ...]  #: one sample; token models: (sequence length,)
    num_classes: int
    description: str
    trainable_here: bool  #: has a zoo module fedbw can train (others: estimate/synthetic only)
    dataset: str = "synthetic"  #: default dataset for real training
    num_arrays: int = 300  #: trainable tensors (framing cost per array); LLMs: a typical figure

    @property
    def array_params(self) -> tuple[int, ...]:
        """Values in each trainable tensor, in the order Flower sends them (empty: not known). Flower sends
        every array as its own objects, so how the bytes split over arrays sets how many of Flower's
        per-object round trips hide behind bulk bytes (fedbw.netmodel.objects)."""
        return tuple(_array_params().get(self.name, ()))

    @property
    def array_shares(self) -> tuple[float, ...]:
        """Each trainable tensor's fraction of the model's values (empty: not known)."""
        sizes = self.array_params
        total = sum(sizes)
        return tuple(n / total for n in sizes) if total else ()

    @property
    def float32_bytes(self) -> int:
        return 4 * self.params

    @property
    def training_flops_per_sample(self) -> float:
        """Forward + backward ≈ 3 × forward (backward computes two products per forward one)."""
        return 3.0 * self.forward_flops


MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in [
        ModelSpec("mlp", 9_610, 18_944, (1, 8, 8), 10, "MLP 64-128-10 for 8×8 digits", True, "digits", 4),
        ModelSpec("small-cnn", 136_586, 871_680, (1, 8, 8), 10, "2-conv CNN for 8×8 digits", True, "digits", 8),
        ModelSpec("resnet18", 11_689_512, 3_628_146_688, (3, 224, 224), 1000, "ResNet-18, ImageNet head", True,
                  num_arrays=62),
        ModelSpec("resnet50", 25_557_032, 8_178_368_512, (3, 224, 224), 1000, "ResNet-50, ImageNet head", True,
                  num_arrays=161),
        ModelSpec("vit-b-16", 86_567_656, 35_127_656_448, (3, 224, 224), 1000, "ViT-B/16, ImageNet head", True,
                  num_arrays=152),
        ModelSpec("gpt2-small", 124_439_808, 291_648_307_200, (1024,), 50257, "GPT-2 small, 1024-token context",
                  True, num_arrays=148),
        # Published sizes; FLOPs ≈ 2 × params per token, one 2048-token sequence per sample.
        ModelSpec("llm-6b", 6_053_381_344, 2.0 * 6_053_381_344 * 2048, (2048,), 50400, "GPT-J 6B", False),
        ModelSpec("llm-7b", 6_738_415_616, 2.0 * 6_738_415_616 * 2048, (2048,), 32000, "LLaMA 7B", False),
        ModelSpec("gpt3-175b", 175_000_000_000, 2.0 * 175e9 * 2048, (2048,), 50257, "GPT-3 175B", False),
    ]
}


@cache
def _array_params() -> dict[str, list[int]]:
    """The zoo models' tensor sizes, stored like the parameter counts (tests/catalog/test_models.py
    rebuilds every module and fails, with the line that regenerates the file, when they drift)."""
    return json.loads((Path(__file__).with_name("model-arrays.json")).read_text(encoding="utf-8"))


def model_from_params(params: int) -> ModelSpec:
    """An anonymous model of ``params`` parameters (FLOPs ≈ 2 per parameter per sample)."""
    if params <= 0:
        raise CatalogError(f"params must be a positive integer, got {params}.")
    return ModelSpec(f"params={params}", params, 2.0 * params, (1,), 10, "custom size", False)


def get_model(name: str) -> ModelSpec:
    """Catalog model by name, or ``params=N`` (N may use k/M/B suffixes or scientific notation)."""
    if name.startswith("params="):
        return model_from_params(parse_count(name.removeprefix("params=")))
    return lookup(MODELS, name, "model", "fedbw models")


def parse_count(text: str) -> int:
    """Parse "25557032", "25.6M", "7B", "1.2e9" into an integer count."""
    suffixes = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
    t = text.strip().replace("_", "")
    scale = 1.0
    if t and t[-1] in suffixes:
        scale, t = suffixes[t[-1]], t[:-1]
    try:
        value = float(t) * scale
    except ValueError:
        raise CatalogError(f"cannot read parameter count {text!r}; write e.g. params=25557032 or params=7B.") from None
    if value <= 0 or value != value:
        raise CatalogError(f"parameter count must be positive, got {text!r}.")
    return int(round(value))
