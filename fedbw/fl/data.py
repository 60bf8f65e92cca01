"""Client and server data that ships with scikit-learn or is generated locally — no downloads.

* ``digits``: scikit-learn's 1,797 8×8 images. A seeded split holds out ``data.test_fraction`` for the
  server's centralized evaluation; the rest is the clients' pool.
* ``synthetic``: samples shaped for the model (images: a per-class pattern plus noise, so the task is
  learnable; token models: per-class arithmetic token sequences for next-token prediction). Each
  client generates only its own samples, so memory does not grow with the number of clients.

Partitions: ``iid`` (digits: disjoint slices of a seeded permutation) or ``dirichlet`` (each client's
label mix drawn from Dir(α), the usual non-IID benchmark; small α = few classes per client). Every
client gets ``plan.clients[cid].num_samples`` samples, the number the plan's compute estimate uses.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fedbw.plan import Plan, resolve_dataset

SYNTHETIC_TEST_SAMPLES = 128
SYNTHETIC_TOKEN_TEST_SAMPLES = 8


@dataclass(frozen=True)
class Dataset:
    x: np.ndarray  #: float32 images (N, C, H, W) or int64 tokens (N, T)
    y: np.ndarray  #: int64 labels (N,)

    def __len__(self) -> int:
        return len(self.y)


def is_token_model(plan: Plan) -> bool:
    return len(plan.model.input_shape) == 1


def _rng(plan: Plan, *parts: object) -> np.random.Generator:
    """A generator keyed by the seed and ``parts`` (crc32 of strings: stable across processes)."""
    seq = [plan.config.seed & 0xFFFFFFFF] + [p if isinstance(p, int) else zlib.crc32(str(p).encode()) for p in parts]
    return np.random.default_rng(seq)


@lru_cache(maxsize=2)
def _digits_split(seed: int, test_fraction: float) -> tuple[Dataset, Dataset]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    y = d.target.astype(np.int64)
    order = np.random.default_rng([seed, 1797]).permutation(len(y))
    n_train = int(len(y) * (1 - test_fraction))
    tr, te = order[:n_train], order[n_train:]
    return Dataset(x[tr], y[tr]), Dataset(x[te], y[te])


def _label_mix(plan: Plan, cid: int) -> np.ndarray:
    """Class probabilities of client ``cid``: uniform (iid) or Dir(α)."""
    k = plan.model.num_classes if not is_token_model(plan) else 10
    if plan.config.data.partition == "iid":
        return np.full(k, 1.0 / k)
    alpha = plan.config.data.dirichlet_alpha
    return _rng(plan, "dirichlet", cid).dirichlet(np.full(k, alpha))


def client_dataset(plan: Plan, cid: int) -> Dataset:
    """The training samples of client ``cid`` (deterministic in the seed)."""
    n = plan.clients[cid].num_samples
    if resolve_dataset(plan.config, plan.model) == "digits":
        return _digits_client(plan, cid, n)
    labels = _rng(plan, "labels", cid).choice(len(_label_mix(plan, cid)), size=n, p=_label_mix(plan, cid))
    return _synthetic(plan, labels.astype(np.int64), _rng(plan, "samples", cid))


def holdout_dataset(plan: Plan) -> Dataset:
    """The server's held-out evaluation set."""
    if resolve_dataset(plan.config, plan.model) == "digits":
        return _digits_split(plan.config.seed, plan.config.data.test_fraction)[1]
    n = SYNTHETIC_TOKEN_TEST_SAMPLES if is_token_model(plan) else SYNTHETIC_TEST_SAMPLES
    k = plan.model.num_classes if not is_token_model(plan) else 10
    labels = _rng(plan, "test-labels").integers(0, k, size=n)
    return _synthetic(plan, labels.astype(np.int64), _rng(plan, "test-samples"))


def _digits_client(plan: Plan, cid: int, n: int) -> Dataset:
    pool, _ = _digits_split(plan.config.seed, plan.config.data.test_fraction)
    total = plan.config.clients.total
    if plan.config.data.partition == "iid":
        # Disjoint slices while the pool lasts; beyond it (samples_per_client set high) slices wrap.
        reps = -(-n * total // len(pool))
        order = np.concatenate([np.random.default_rng([plan.config.seed, 7, r]).permutation(len(pool))
                                for r in range(reps)])
        idx = order[cid * n:(cid + 1) * n]
        return Dataset(pool.x[idx], pool.y[idx])
    mix = _label_mix(plan, cid)
    rng = _rng(plan, "digits-dirichlet", cid)
    labels = rng.choice(len(mix), size=n, p=mix)
    by_class = [np.flatnonzero(pool.y == k) for k in range(len(mix))]
    idx = np.array([rng.choice(by_class[k]) for k in labels], dtype=np.int64)
    return Dataset(pool.x[idx], pool.y[idx])


def _synthetic(plan: Plan, labels: np.ndarray, rng: np.random.Generator) -> Dataset:
    shape = tuple(plan.model.input_shape)
    if is_token_model(plan):
        vocab, t = plan.model.num_classes, shape[0]
        starts = rng.integers(0, vocab, size=len(labels))
        steps = labels + 1
        x = (starts[:, None] + steps[:, None] * np.arange(t)[None, :]) % vocab
        return Dataset(x.astype(np.int64), labels)
    protos: dict[int, np.ndarray] = {}
    x = np.empty((len(labels), *shape), dtype=np.float32)
    for i, k in enumerate(labels):
        k = int(k)
        if k not in protos:
            protos[k] = np.random.default_rng([plan.config.seed, 99, k]).standard_normal(shape).astype(np.float32)
        x[i] = protos[k] + rng.standard_normal(shape).astype(np.float32)
    return Dataset(x, labels)
