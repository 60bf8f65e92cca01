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

#: Flower Message framing (metadata, record keys, object tree) per message, bytes. Measured with the
#: simulate engine (docs/simulate.md, 2026-11-30, flwr 1.42.0): plain FedAvg downloads carry ≈ 476 B,
#: uploads ≈ 1,200 B (FitRes status/metrics plus fedbw's 100-200 B measurement record); this is their mean.
MESSAGE_OVERHEAD_BYTES = 840
#: Per array: .npy header (128 B), the Array object and its chunk object (headers, 64-hex object ids).
#: Fitted on mlp (4 arrays), small-cnn (8) and resnet18 (62): 431-439 B per array.
ARRAY_OVERHEAD_BYTES = 437
#: SecAgg+ messages, measured with Flower's own serialization on fedbw.fl.privacy.loopback (64-bit node
#: IDs, flwr 1.42.0, 2026-11-30, k = 2, 4, 6 neighbours; fits within 3 %, most exact): k = neighbours
#: other than the client itself (num_shares − 1). Control-message framing (metadata + the
#: "secaggplus_configs" record) and setup's parameters:
SECAGG_CONTROL_MESSAGE_BYTES = 380
SECAGG_SETUP_CONFIG_BYTES = 97
#: One SECP384R1 public key as uploaded in setup (two per client).
SECAGG_PUBLIC_KEY_BYTES = 212
#: One neighbour's forwarded key pair and ID in share_keys (the client gets k + 1 of them).
SECAGG_NEIGHBOUR_KEYS_BYTES = 467
#: One Fernet-encrypted pair of Shamir shares with its node ID (share_keys up, collect_masked_vectors down).
SECAGG_ENCRYPTED_SHARE_BYTES = 625
#: collect_masked_vectors' stage config beside the FitIns.
SECAGG_COLLECT_CONFIG_BYTES = 241
#: One node ID in unmask's active/dead lists; one Shamir share with its owner ID in the unmask reply.
SECAGG_NODE_ID_BYTES = 10
SECAGG_SHARE_BYTES = 64
#: The masked-vector reply: framing, plus per array (np.save header + list entry; one extra array holds
#: the weight factor). Masked vectors travel as bytes in a ConfigRecord, not as chunked Arrays.
SECAGG_MASKED_MESSAGE_BYTES = 1_110
SECAGG_MASKED_ARRAY_BYTES = 131
#: fedbw's measurement record (fedbw.fl.measure) rides on every SecAgg+ reply: all four stages are
#: train messages.
SECAGG_REPLY_EXTRA_BYTES = 233


#: Flower sends an array's bytes in chunks of at most this, each its own object and request
#: (``FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE``, flwr/common/constant.py).
ARRAY_CHUNK_BYTES = 5 * 2**20
#: Objects of a message besides its arrays and chunks: Message, RecordDict and its records. Measured
#: (flwr 1.42, legacy path): a FitIns with one array is 5 + ⌈B/5 MiB⌉ objects, a FitRes 7 + ⌈B/5 MiB⌉.
DOWN_OVERHEAD_OBJECTS = 4
UP_OVERHEAD_OBJECTS = 6


@dataclass(frozen=True)
class MessageSizes:
    """One stage's messages for one client: bytes and objects it downloads and uploads."""

    stage: str
    bytes_down: float
    bytes_up: float
    computes: bool  #: the client trains in this stage
    objects_down: int = DOWN_OVERHEAD_OBJECTS  #: Flower objects (one request each) in the download
    objects_up: int = UP_OVERHEAD_OBJECTS
    client_extra_s: float = 0.0  #: client work besides training in this stage (e.g. SecAgg+ crypto)
    compute_s: float | None = None  #: this stage's measured training time (None: the client's compute)


def message_objects(arrays: int, nbytes: float, overhead: int) -> int:
    """Objects of a message carrying ``arrays`` arrays of ``nbytes`` in all: the overhead objects, one
    Array each and its ≤ 5 MiB chunks (at least one per array; a large array needs more)."""
    if arrays <= 0:
        return overhead
    return overhead + arrays + arrays + max(0, math.ceil(nbytes / ARRAY_CHUNK_BYTES) - 1)


def array_bytes(params: int, num_arrays: int, bytes_per_value: float) -> float:
    """Serialized size of a model's arrays at ``bytes_per_value``."""
    return params * bytes_per_value + num_arrays * ARRAY_OVERHEAD_BYTES


def update_bytes(params: int, num_arrays: int, codec: str = "none", topk_fraction: float = 0.01) -> float:
    """Uplink payload of one client update after compression.

    fp16 halves, int8 quarters (plus one extra float32 array holding each tensor's scale), top-k keeps
    ⌈f·P⌉ values and pays a 4-byte index for each, in two arrays (indices, values) whatever the model's
    tensor count — so top-k only saves bytes below f = 0.5. Array counts as fedbw.fl.compress sends them.
    """
    if codec == "none":
        return array_bytes(params, num_arrays, 4)
    if codec == "fp16":
        return array_bytes(params, num_arrays, 2)
    if codec == "int8":
        return array_bytes(params, num_arrays + 1, 1) + 4 * num_arrays
    if codec == "topk":
        if not 0 < topk_fraction <= 1:
            raise ValueError(f"topk_fraction must be in (0, 1], got {topk_fraction}")
        k = math.ceil(topk_fraction * params)
        return k * (4 + 4) + 2 * ARRAY_OVERHEAD_BYTES
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
    down_objects = message_objects(num_arrays, model_down, DOWN_OVERHEAD_OBJECTS)
    if secagg == "off":
        up = MESSAGE_OVERHEAD_BYTES + update_bytes(params, num_arrays, codec, topk_fraction)
        up_arrays = {"none": num_arrays, "fp16": num_arrays, "int8": num_arrays + 1, "topk": 2}[codec]
        return [MessageSizes("fit", model_down, up, True, down_objects,
                             message_objects(up_arrays, up, UP_OVERHEAD_OBJECTS))]
    if codec != "none":
        raise ValueError("compression codecs do not compose with SecAgg+ (masked values are uniform)")
    k = num_neighbours
    ctl, extra = SECAGG_CONTROL_MESSAGE_BYTES, SECAGG_REPLY_EXTRA_BYTES
    masked_up = (SECAGG_MASKED_MESSAGE_BYTES + extra + (num_arrays + 1) * SECAGG_MASKED_ARRAY_BYTES
                 + (params + 1) * masked_value_bytes(secagg, modulus_range))
    # control messages: config records only; the masked vector rides in a ConfigRecord as one
    # unchunked object (and fedbw's measurement record)
    ctl_down, ctl_up = DOWN_OVERHEAD_OBJECTS, UP_OVERHEAD_OBJECTS
    return [
        MessageSizes("setup", ctl + SECAGG_SETUP_CONFIG_BYTES, ctl + extra + 2 * SECAGG_PUBLIC_KEY_BYTES, False,
                     ctl_down, ctl_up),
        MessageSizes("share_keys", ctl + (k + 1) * SECAGG_NEIGHBOUR_KEYS_BYTES,
                     ctl + extra + k * SECAGG_ENCRYPTED_SHARE_BYTES, False, ctl_down, ctl_up),
        MessageSizes("collect_masked_vectors",
                     model_down + SECAGG_COLLECT_CONFIG_BYTES + k * SECAGG_ENCRYPTED_SHARE_BYTES, masked_up, True,
                     down_objects + 1, ctl_up),
        MessageSizes("unmask", ctl + (k + 1) * SECAGG_NODE_ID_BYTES, ctl + extra + (k + 1) * SECAGG_SHARE_BYTES,
                     False, ctl_down, ctl_up),
    ]
