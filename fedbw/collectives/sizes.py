"""What a user types to choose an AllReduce sweep: sizes, rank counts and the element type.

nccl-tests' conventions: ``-b begin -e end -f factor`` in bytes with K/M/G as powers of 1024, the
factor 2 when none is given; each size is cut to a whole number of elements, as nccl-tests does.
Pure (no torch): the model-only ``fedbw allreduce`` must answer without importing it.
"""

from __future__ import annotations

from fedbw.errors import ConfigError

#: Element types the measured AllReduce runs, with their size in bytes (nccl-tests' -d float/bfloat16/half).
DTYPE_BYTES: dict[str, int] = {"float32": 4, "bfloat16": 2, "float16": 2}
_DTYPE_ALIASES = {"float": "float32", "fp32": "float32", "bf16": "bfloat16", "half": "float16", "fp16": "float16"}

#: nccl-tests' default step factor between sizes.
DEFAULT_FACTOR = 2.0
MAX_SIZES = 200


def _one_size(t: str, text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    raw, t = t.strip(), t.strip().upper().removesuffix("B")
    scale = units.get(t[-1:], 1)
    num = t[:-1] if t[-1:] in units else t
    try:
        value = float(num) * scale
    except ValueError:
        raise ConfigError(f"--sizes {text!r}: cannot read {raw or 'an empty size'!r}; write e.g. 128M, 1K:64M or "
                          "8:1G:2") from None
    if value <= 0 or value != value:
        raise ConfigError(f"--sizes {text!r}: sizes must be positive")
    return int(value)


def parse_sizes(text: str) -> list[int]:
    """nccl-tests' size sweep: ``begin:end`` (factor 2), ``begin:end:factor`` (``8:128M:4``) or one size."""
    parts = text.split(":")
    if len(parts) == 1:
        return [_one_size(parts[0], text)]
    if len(parts) not in (2, 3):
        raise ConfigError(f"--sizes {text!r}: write one size, begin:end or begin:end:factor, e.g. 1K:64M")
    begin, end = _one_size(parts[0], text), _one_size(parts[1], text)
    try:
        factor = float(parts[2]) if len(parts) == 3 else DEFAULT_FACTOR
    except ValueError:
        raise ConfigError(f"--sizes {text!r}: the factor must be a number > 1") from None
    if factor <= 1 or end < begin:
        raise ConfigError(f"--sizes {text!r}: need begin ≤ end and a factor > 1")
    out, size = [], float(begin)
    while size <= end * (1 + 1e-9) and len(out) < MAX_SIZES:
        out.append(int(size))
        size *= factor
    return out


def parse_ranks(text: str) -> list[int]:
    """``8``, ``2,4,8`` or ``2:1024`` (powers of two from 2 to 1024)."""
    try:
        if ":" in text:
            lo, hi = (int(x) for x in text.split(":"))
            out, r = [], lo
            while r <= hi and r >= 1:
                out.append(r)
                r *= 2
        else:
            out = [int(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(f"--ranks {text!r}: write 8, 2,4,8 or 2:1024") from None
    if not out or any(r < 2 for r in out):
        raise ConfigError(f"--ranks {text!r}: every rank count must be ≥ 2")
    return out


def parse_dtype(name: str) -> str:
    """The canonical element-type name (``float32``, ``bfloat16``, ``float16``); aliases accepted."""
    key = name.strip().lower()
    key = _DTYPE_ALIASES.get(key, key)
    if key not in DTYPE_BYTES:
        raise ConfigError(f"--dtype {name!r}: choose float32, bfloat16 or float16")
    return key


def element_count(size_bytes: int, dtype: str) -> int:
    """Elements in a buffer of ``size_bytes`` (at least one), as nccl-tests rounds a size down."""
    return max(1, size_bytes // DTYPE_BYTES[dtype])
