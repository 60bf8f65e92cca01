"""Where a run's randomness comes from: generators derived from the config's seed, or the OS.

Why one home: amplification by subsampling and DP noise are only as good as the randomness behind them,
and a run is only reproducible if every draw (sampling, partitions, synthetic data, DP noise, SecAgg+'s
stochastic rounding) comes from a generator derived from ``seed``. fedbw derives each generator from the
seed and a label naming the purpose (``("sample", r)``, ``("client-np", r, cid, stage)``, ...), so two
draws never share a stream by accident and adding a draw elsewhere shifts nothing.

``privacy.randomness = "seed"`` (default) is what a simulation wants: the same config and seed give the
same draws. It is **not secret**: whoever knows the seed knows the sample and can subtract the noise.
``"os"`` draws sampling from OS entropy and leaves NumPy's global generator alone (NumPy seeds it from OS
entropy at import); that is the deployment setting, and runs are then not reproducible. Even then,
Flower's noise comes from NumPy's Mersenne Twister, not a cryptographic generator (docs/privacy.md).
"""

from __future__ import annotations

import random
import zlib
from typing import Literal

import numpy as np

Randomness = Literal["seed", "os"]


def _part(p: object) -> int:
    """A label part as a stable 32-bit integer (crc32 of strings: the same in every process)."""
    if isinstance(p, bool) or not isinstance(p, int):
        return zlib.crc32(str(p).encode())
    return p & 0xFFFFFFFF


def derived_seed(seed: int, *parts: object) -> int:
    """A 32-bit seed for ``np.random.seed`` (Flower's DP noise and stochastic rounding draw from NumPy's
    global Mersenne Twister, which takes 32-bit seeds), derived from the run's seed and a purpose label."""
    entropy = [seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF, *(_part(p) for p in parts)]
    return int(np.random.SeedSequence(entropy).generate_state(1, dtype=np.uint32)[0])


def python_rng(randomness: Randomness, seed: int, *parts: object) -> random.Random:
    """A ``random.Random`` for one purpose: seeded from the labelled seed, or the OS's CSPRNG."""
    if randomness == "os":
        return random.SystemRandom()
    return random.Random(":".join([str(seed), *map(str, parts)]))


def seed_numpy_global(randomness: Randomness, seed: int, *parts: object) -> None:
    """Seed NumPy's global generator for the draws Flower makes from it next (no-op with ``"os"``).

    Flower's ``LocalDpMod``, its central-DP wrappers and SecAgg+'s stochastic rounding call
    ``np.random.normal`` / ``np.random.rand`` on the process-global generator; seeding it at a point
    labelled by round, client and stage makes those draws a function of the seed and that label alone,
    whichever process or Ray actor runs the message and in whatever order.
    """
    if randomness == "seed":
        np.random.seed(derived_seed(seed, *parts))
