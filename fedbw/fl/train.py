"""Local training and centralized evaluation of zoo models, timed honestly.

fedbw federates ``model.parameters()`` only (in order); buffers such as BatchNorm statistics stay with
the client (FedBN). Compute time is ``perf_counter`` around the training loop, with
``torch.cuda.synchronize()`` before each clock read on GPU so queued kernels are counted.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import torch
from torch import nn

from fedbw.fl.data import Dataset
from fedbw.models.zoo import MODEL_BUILDERS, build_model

#: Local optimizer: SGD with momentum (as in Flower's PyTorch quickstart); fresh each round.
MOMENTUM = 0.9


def seeded_model(name: str, seed: int, device: str = "cpu") -> nn.Module:
    """The run's initial model: the same weights in every process for the same seed."""
    torch.manual_seed(seed)
    return build_model(name, device)


def parameter_shapes(name: str) -> list[tuple[int, ...]]:
    """Shapes of the federated tensors: a zoo model's from a meta-device model (no memory, no init time);
    a model the zoo cannot build (``params=N``, the catalog's LLMs; synthetic compute only) as the catalog
    lays it out for the network model — its tensors' sizes where known, else its parameters split evenly
    over its ``num_arrays`` — so the bytes and objects sent are the ones estimate predicts."""
    if name in MODEL_BUILDERS:
        return [tuple(p.shape) for p in build_model(name, "meta").parameters()]
    from fedbw.catalog import get_model

    spec = get_model(name)
    sizes = spec.array_params or _split(spec.params, spec.num_arrays)
    return [(n,) for n in sizes]


def _split(total: int, parts: int) -> tuple[int, ...]:
    """``total`` values over ``parts`` arrays as evenly as integers allow (the first take the remainder)."""
    parts = max(1, min(parts, total))
    base, extra = divmod(total, parts)
    return tuple(base + (i < extra) for i in range(parts))


def get_parameters(model: nn.Module) -> list[np.ndarray]:
    return [p.detach().cpu().numpy().astype(np.float32, copy=False) for p in model.parameters()]


def set_parameters(model: nn.Module, arrays: Sequence[np.ndarray]) -> None:
    params = list(model.parameters())
    if len(params) != len(arrays):
        raise ValueError(f"model has {len(params)} parameter tensors, update has {len(arrays)}")
    with torch.no_grad():
        for p, a in zip(params, arrays):
            p.copy_(torch.as_tensor(np.asarray(a), dtype=p.dtype).reshape(p.shape))


def _loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, tokens: bool) -> tuple[torch.Tensor, int, int]:
    """Mean loss, correct predictions and prediction count for one batch."""
    out = model(x)
    if tokens:  # next-token prediction over the sequence
        logits, target = out[:, :-1].reshape(-1, out.shape[-1]), x[:, 1:].reshape(-1)
    else:
        logits, target = out, y
    loss = nn.functional.cross_entropy(logits, target)
    correct = int((logits.argmax(dim=1) == target).sum())
    return loss, correct, int(target.numel())


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def train(model: nn.Module, data: Dataset, *, device: str, epochs: int, steps: int | None, batch_size: int,
          learning_rate: float, seed: int, tokens: bool) -> tuple[float, int, float]:
    """Plain SGD for ``steps`` batches (or ``epochs`` passes). Returns (mean loss, examples seen, compute_s)."""
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=MOMENTUM)
    x_all = torch.as_tensor(data.x)
    y_all = torch.as_tensor(data.y)
    gen = torch.Generator().manual_seed(seed)
    n = len(data)
    total_loss, seen, batches = 0.0, 0, 0
    _sync(device)
    t0 = time.perf_counter()
    target_batches = steps if steps is not None else epochs * max(1, -(-n // batch_size))
    while batches < target_batches:
        order = torch.randperm(n, generator=gen)
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            x, y = x_all[idx].to(device), y_all[idx].to(device)
            opt.zero_grad(set_to_none=True)
            loss, _, _ = _loss(model, x, y, tokens)
            loss.backward()
            opt.step()
            total_loss += float(loss.detach()) * len(idx)
            seen += len(idx)
            batches += 1
            if batches >= target_batches:
                break
    _sync(device)
    compute_s = time.perf_counter() - t0
    return total_loss / max(seen, 1), seen, compute_s


@torch.no_grad()
def evaluate(model: nn.Module, data: Dataset, *, device: str, tokens: bool, batch_size: int = 256) -> tuple[float, float]:
    """(mean loss, accuracy) on ``data``."""
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    for start in range(0, len(data), batch_size):
        x = torch.as_tensor(data.x[start:start + batch_size]).to(device)
        y = torch.as_tensor(data.y[start:start + batch_size]).to(device)
        loss, c, k = _loss(model, x, y, tokens)
        total_loss += float(loss) * k
        correct += c
        count += k
    return total_loss / max(count, 1), correct / max(count, 1)
