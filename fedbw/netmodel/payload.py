"""Bytes on the wire per round stage — every expansion and compression factor lives here.

The constants describe Flower 1.42's wire format (numpy ``.npy`` arrays inside protobuf records).
``simulate`` measures real serialized bytes, and tests/engines check these predictions against them;
change a constant here only with a measurement that justifies it (docs/methodology.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CODECS = ("none", "fp16", "int8", "topk")
SECAGG_MODES = ("off", "stock", "packed")

#: Flower Message framing (metadata, record keys, object tree) per message, bytes.
MESSAGE_OVERHEAD_BYTES = 1_200
#: Per array: .npy header (128 B) plus the record entry holding it.
ARRAY_OVERHEAD_BYTES = 200
#: SecAgg+ control payloads (SECP384R1 keys in PEM, Fernet-encrypted Shamir shares), bytes.
SECAGG_PUBLIC_KEY_BYTES = 215
SECAGG_ENCRYPTED_SHARE_BYTES = 330
SECAGG_SHARE_BYTES = 60


@dataclass(frozen=True)
class MessageSizes:
    """Bytes of one stage's messages for one client: what it downloads and what it uploads."""

    stage: str
    bytes_down: float
    bytes_up: float
    computes: bool  #: the client trains in this stage


def array_bytes(params: int, num_arrays: int, bytes_per_value: float) -> float:
    """Serialized size of a model's arrays at ``bytes_per_value``."""
    return params * bytes_per_value + num_arrays * ARRAY_OVERHEAD_BYTES


def update_bytes(params: int, num_arrays: int, codec: str = "none", topk_fraction: float = 0.01) -> float:
    """Uplink payload of one client update after compression.

    fp16 halves, int8 quarters (plus one float32 scale per tensor), top-k keeps ⌈f·P⌉ values and pays
    a 4-byte index for each — so top-k only saves bytes below f = 0.5.
    """
    if codec == "none":
        return array_bytes(params, num_arrays, 4)
    if codec == "fp16":
        return array_bytes(params, num_arrays, 2)
    if codec == "int8":
        return array_bytes(params, num_arrays, 1) + 4 * num_arrays
    if codec == "topk":
        if not 0 < topk_fraction <= 1:
            raise ValueError(f"topk_fraction must be in (0, 1], got {topk_fraction}")
        k = math.ceil(topk_fraction * params)
        return k * (4 + 4) + num_arrays * ARRAY_OVERHEAD_BYTES
    raise ValueError(f"unknown codec {codec!r}; choose from {', '.join(CODECS)}")


def masked_value_bytes(secagg: str, modulus_range: int = 2**32) -> int:
    """Bytes per masked value. Stock Flower stores int64; packed uses the smallest unsigned type
    that holds values below the modulus."""
    if secagg == "stock":
        return 8
    for width in (1, 2, 4, 8):
        if modulus_range <= 2 ** (8 * width):
            return width
    raise ValueError(f"modulus_range {modulus_range} exceeds 2^64")


def round_exchanges(params: int, num_arrays: int, round_index: int, *, codec: str = "none",
                    topk_fraction: float = 0.01, secagg: str = "off", num_neighbours: int = 0,
                    modulus_range: int = 2**32) -> list[MessageSizes]:
    """The message exchanges of one client in one training round, in order.

    Plain FedAvg is one exchange (download model, train, upload update). SecAgg+ is four: setup,
    share_keys, collect_masked_vectors (download model, train, upload masked vector) and unmask.
    Stock SecAgg+ returns a float64 aggregate, so every download after round 1 doubles.
    """
    if secagg not in SECAGG_MODES:
        raise ValueError(f"unknown secagg mode {secagg!r}")
    download_value_bytes = 8 if (secagg == "stock" and round_index > 1) else 4
    model_down = MESSAGE_OVERHEAD_BYTES + array_bytes(params, num_arrays, download_value_bytes)
    if secagg == "off":
        up = MESSAGE_OVERHEAD_BYTES + update_bytes(params, num_arrays, codec, topk_fraction)
        return [MessageSizes("fit", model_down, up, True)]
    if codec != "none":
        raise ValueError("compression codecs do not compose with SecAgg+ (masked values are uniform)")
    k = num_neighbours
    masked_up = MESSAGE_OVERHEAD_BYTES + array_bytes(params, num_arrays, masked_value_bytes(secagg, modulus_range))
    return [
        MessageSizes("setup", MESSAGE_OVERHEAD_BYTES, MESSAGE_OVERHEAD_BYTES + 2 * SECAGG_PUBLIC_KEY_BYTES, False),
        MessageSizes("share_keys", MESSAGE_OVERHEAD_BYTES + (k + 1) * 2 * SECAGG_PUBLIC_KEY_BYTES,
                     MESSAGE_OVERHEAD_BYTES + k * SECAGG_ENCRYPTED_SHARE_BYTES, False),
        MessageSizes("collect_masked_vectors", model_down + k * SECAGG_ENCRYPTED_SHARE_BYTES, masked_up, True),
        MessageSizes("unmask", MESSAGE_OVERHEAD_BYTES + (k + 1) * 8, MESSAGE_OVERHEAD_BYTES + k * SECAGG_SHARE_BYTES,
                     False),
    ]
