"""Torch modules fedbw trains or sizes.

Defined here rather than pulled from torchvision: the CPU torch wheel this project pins has no
matching torchvision build, and parameter counts must come from real modules, not from tables.
"""

from fedbw.models.zoo import build_model, MODEL_BUILDERS

__all__ = ["build_model", "MODEL_BUILDERS"]
