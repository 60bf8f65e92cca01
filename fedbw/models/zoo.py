"""Reference architectures, parameter-for-parameter equal to their usual definitions.

ResNet-18/50 and ViT-B/16 match torchvision's layouts (11,689,512 / 25,557,032 / 86,567,656
parameters); GPT-2 small matches the released 124,439,808-parameter model (tied embeddings). The
small CNN and MLP are sized for scikit-learn's 8×8 digits so real training fits on two CPU cores.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn


class SmallCNN(nn.Module):
    """Two 3×3 convolutions and two linear layers; ≈136k parameters for 8×8 single-channel images."""

    def __init__(self, in_channels: int = 1, image_size: int = 8, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
        )
        self.head = nn.Sequential(
            nn.Flatten(),
            nn.Linear(32 * image_size * image_size, 64),
            nn.ReLU(),
            nn.Linear(64, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class MLP(nn.Module):
    """One hidden layer over flattened inputs: the smallest model worth federating."""

    def __init__(self, in_features: int = 64, hidden: int = 128, num_classes: int = 10) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class _BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = _downsample(in_planes, planes * self.expansion, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (self.downsample(x) if self.downsample is not None else x))


class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_planes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = _downsample(in_planes, planes * self.expansion, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = torch.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return torch.relu(out + (self.downsample(x) if self.downsample is not None else x))


def _downsample(in_planes: int, out_planes: int, stride: int) -> nn.Module | None:
    if stride == 1 and in_planes == out_planes:
        return None
    return nn.Sequential(nn.Conv2d(in_planes, out_planes, 1, stride, bias=False), nn.BatchNorm2d(out_planes))


class ResNet(nn.Module):
    """ImageNet ResNet (He et al. 2016) with torchvision's layer layout."""

    def __init__(self, block: type[_BasicBlock] | type[_Bottleneck], layers: list[int], num_classes: int = 1000,
                 in_channels: int = 3) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        )
        planes, in_planes, stages = 64, 64, []
        for i, blocks in enumerate(layers):
            stride = 1 if i == 0 else 2
            stage = []
            for b in range(blocks):
                stage.append(block(in_planes, planes, stride if b == 0 else 1))
                in_planes = planes * block.expansion
            stages.append(nn.Sequential(*stage))
            planes *= 2
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_planes, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.stages(self.stem(x))), 1))


class _EncoderBlock(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_dim: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class ViT(nn.Module):
    """Vision Transformer (Dosovitskiy et al. 2021), torchvision's ViT-B/16 layout."""

    def __init__(self, image_size: int = 224, patch: int = 16, dim: int = 768, depth: int = 12, heads: int = 12,
                 mlp_dim: int = 3072, num_classes: int = 1000) -> None:
        super().__init__()
        self.patchify = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, (image_size // patch) ** 2 + 1, dim))
        self.blocks = nn.ModuleList(_EncoderBlock(dim, heads, mlp_dim) for _ in range(depth))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patchify(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos[:, : x.shape[1] + 1]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x[:, 0]))


class GPT2(nn.Module):
    """GPT-2 small (Radford et al. 2019): 12 layers, 768 wide, 50,257-token vocabulary, tied output head."""

    def __init__(self, vocab: int = 50257, context: int = 1024, dim: int = 768, depth: int = 12, heads: int = 12) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(_EncoderBlock(dim, heads, 4 * dim) for _ in range(depth))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device))
        mask = torch.triu(torch.full((t, t), float("-inf"), device=tokens.device), diagonal=1)
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln_f(x))


MODEL_BUILDERS: dict[str, Callable[[], nn.Module]] = {
    "mlp": MLP,
    "small-cnn": SmallCNN,
    "resnet18": lambda: ResNet(_BasicBlock, [2, 2, 2, 2]),
    "resnet50": lambda: ResNet(_Bottleneck, [3, 4, 6, 3]),
    "vit-b-16": ViT,
    "gpt2-small": GPT2,
}


def build_model(name: str, device: torch.device | str | None = None) -> nn.Module:
    """Instantiate a zoo model; ``device="meta"`` sizes it without allocating a byte."""
    builder = MODEL_BUILDERS[name]
    if device is None:
        return builder()
    with torch.device(device):
        return builder()
