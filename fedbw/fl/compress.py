"""Update compression as a Flower client mod, with the matching server-side decoding.

Codecs encode the client's *update* (trained parameters − the global model it received), never the
raw weights: updates are small and centred on zero, which is what the codecs' precision budget is
for, and it is the update that DP clips and top-k sparsifies.

* ``fp16`` — every value as float16 (2 B/value). Values beyond ±65504 saturate.
* ``int8`` — per-tensor symmetric scale s = max|Δ|/127, values round(Δ/s) as int8, plus one float32
  scale per tensor (1 B/value + 4 B/tensor).
* ``topk`` — the k = ⌈f·P⌉ largest-magnitude entries of the whole flattened update, as int32 indices +
  float32 values (8 B per kept value), with **error feedback**: what was not sent is kept in the
  client's ``Context.state`` and added to the next round's update, so nothing is lost, only delayed.

Wire format: the FitRes parameters carry the encoded arrays with ``tensor_type = "fedbw.<codec>"``;
:class:`CodecStrategy` (the outermost strategy wrapper on the server) decodes them back into full
float parameters before any other wrapper or FedAvg sees them. The reply's fit metrics carry
``fedbw.codec.dense_bytes`` and ``fedbw.codec.encoded_bytes``: both *measured* as Flower serializes
the arrays (dense = the float32 update the codec replaced), so the compression ratio needs no model.

Composition (enforced by the config): codecs never run with SecAgg+ (masked values are uniform
integers mod 2^32; there is nothing left to compress and a codec cannot see the update). top-k is
rejected with DP. fp16/int8 compose with DP: local DP noise is added before encoding (quantizing a
noised update is post-processing, so ε is unchanged); with client-side clipping the encoder keeps the
*decoded* update's norm within the clipping norm, so the sensitivity the server's noise is calibrated
to still holds after rounding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np
from flwr.app import ArrayRecord, Context, Message
from flwr.app.message_type import MessageType
from flwr.common import (
    FitRes,
    NDArrays,
    Parameters,
    Scalar,
    ndarray_to_bytes,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.compat.common import recorddict_compat as compat
from flwr.server.client_manager import ClientManager
from flwr.server.client_proxy import ClientProxy
from flwr.server.strategy import Strategy
from flwr.supercore.differential_privacy import KEY_CLIPPING_NORM
from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects, no_object_id_recompute

CODECS = ("fp16", "int8", "topk")
TENSOR_TYPE_PREFIX = "fedbw."
RESIDUAL_RECORD = "fedbw.codec.residual"
DENSE_BYTES_KEY = "fedbw.codec.dense_bytes"
ENCODED_BYTES_KEY = "fedbw.codec.encoded_bytes"
FP16_MAX = float(np.finfo(np.float16).max)

ClientMod = Callable[[Message, Context, Callable[[Message, Context], Message]], Message]


# ------------------------------------------------------------------------------------ the codecs


def topk_count(num_values: int, fraction: float) -> int:
    if not 0 < fraction <= 1:
        raise ValueError(f"topk_fraction must be in (0, 1], got {fraction}")
    return max(1, math.ceil(fraction * num_values))


def encode(delta: Sequence[np.ndarray], codec: str, topk_fraction: float = 0.01) -> list[np.ndarray]:
    """Encode an update (one array per model tensor) into the arrays that travel."""
    if codec == "fp16":
        return [np.clip(d, -FP16_MAX, FP16_MAX).astype(np.float16) for d in delta]
    if codec == "int8":
        scales = np.array([float(np.abs(d).max()) / 127.0 if d.size else 0.0 for d in delta], dtype=np.float32)
        codes = [np.zeros(d.shape, np.int8) if s == 0 else
                 np.clip(np.rint(d / s), -127, 127).astype(np.int8) for d, s in zip(delta, scales)]
        return codes + [scales]
    if codec == "topk":
        flat = np.concatenate([d.ravel() for d in delta]).astype(np.float32, copy=False)
        k = topk_count(flat.size, topk_fraction)
        idx = np.sort(np.argpartition(np.abs(flat), flat.size - k)[flat.size - k:]).astype(np.int32)
        return [idx, flat[idx]]
    raise ValueError(f"unknown codec {codec!r}; choose from {', '.join(CODECS)}")


def decode(arrays: Sequence[np.ndarray], codec: str, shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """Inverse of :func:`encode`: float32 update arrays of the given shapes."""
    if codec == "fp16":
        return [a.astype(np.float32) for a in arrays]
    if codec == "int8":
        *codes, scales = arrays
        return [c.astype(np.float32) * np.float32(s) for c, s in zip(codes, scales)]
    if codec == "topk":
        idx, values = arrays
        total = int(sum(math.prod(s) for s in shapes))
        flat = np.zeros(total, dtype=np.float32)
        flat[idx.astype(np.int64)] = values
        out, start = [], 0
        for s in shapes:
            n = math.prod(s)
            out.append(flat[start:start + n].reshape(s))
            start += n
        return out
    raise ValueError(f"unknown codec {codec!r}; choose from {', '.join(CODECS)}")


def l2_norm(arrays: Sequence[np.ndarray]) -> float:
    return float(math.sqrt(sum(float(np.dot(a.ravel().astype(np.float64), a.ravel().astype(np.float64)))
                               for a in arrays)))


def encode_within_norm(delta: Sequence[np.ndarray], codec: str, max_norm: float,
                       topk_fraction: float = 0.01) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Encode so that the *decoded* update's L2 norm stays ≤ max_norm (rounding can push it above a
    clipped update's norm). Returns (encoded, decoded)."""
    shapes = [d.shape for d in delta]
    scaled = list(delta)
    for _ in range(8):
        enc = encode(scaled, codec, topk_fraction)
        dec = decode(enc, codec, shapes)
        norm = l2_norm(dec)
        if norm <= max_norm:
            return enc, dec
        factor = max_norm / norm * (1 - 1e-6)
        scaled = [d * np.float32(factor) for d in scaled]
    raise RuntimeError("could not encode the update within the clipping norm")  # not reached for these codecs


def serialized_bytes(arrays: Sequence[np.ndarray]) -> int:
    """Bytes Flower puts on the wire for these arrays (an ArrayRecord's object tree)."""
    record = ArrayRecord(list(arrays))
    with no_object_id_recompute():
        return sum(len(obj.deflate()) for obj in get_all_nested_objects(record).values())


def compression_ratio(dense_bytes: float, encoded_bytes: float) -> float:
    """dense / encoded: 2 means the codec halved the upload."""
    return dense_bytes / encoded_bytes if encoded_bytes else math.inf


# ------------------------------------------------------------------------------------ client mod


def compression_mod(codec: str, topk_fraction: float = 0.01, error_feedback: bool = True) -> ClientMod:
    """A client mod that encodes training replies with ``codec``.

    Place it *outside* (before, in the mods list) any mod that produces the final update — DP mods
    (``LocalDpMod``, ``fixedclipping_mod``, ``adaptiveclipping_mod``) — so it encodes what they
    produced; and inside a measuring mod, so the bytes measured are the encoded ones.
    """
    if codec not in CODECS:
        raise ValueError(f"unknown codec {codec!r}; choose from {', '.join(CODECS)}")
    topk_count(1, topk_fraction)  # validates the fraction now, not in round 1

    def mod(msg: Message, ctxt: Context, call_next: Callable[[Message, Context], Message]) -> Message:
        if msg.metadata.message_type != MessageType.TRAIN:
            return call_next(msg, ctxt)
        fit_ins = compat.recorddict_to_fitins(msg.content, keep_input=True)
        global_params = parameters_to_ndarrays(fit_ins.parameters)
        clip = fit_ins.config.get(KEY_CLIPPING_NORM)
        out = call_next(msg, ctxt)
        if out.has_error():
            return out
        fit_res = compat.recorddict_to_fitres(out.content, keep_input=True)
        params = parameters_to_ndarrays(fit_res.parameters)
        delta = [(p.astype(np.float32) - g.astype(np.float32)) for p, g in zip(params, global_params, strict=True)]
        use_ef = codec == "topk" and error_feedback
        if use_ef and RESIDUAL_RECORD in ctxt.state.array_records:
            residual = [a.numpy() for a in ctxt.state.array_records[RESIDUAL_RECORD].values()]
            if [r.shape for r in residual] == [d.shape for d in delta]:
                delta = [d + r for d, r in zip(delta, residual)]
        if clip is not None:
            encoded, decoded = encode_within_norm(delta, codec, float(clip), topk_fraction)
        else:
            encoded = encode(delta, codec, topk_fraction)
            decoded = decode(encoded, codec, [d.shape for d in delta]) if use_ef else []
        if use_ef:
            ctxt.state.array_records[RESIDUAL_RECORD] = ArrayRecord([d - x for d, x in zip(delta, decoded)])
        fit_res.metrics[DENSE_BYTES_KEY] = serialized_bytes(delta)
        fit_res.metrics[ENCODED_BYTES_KEY] = serialized_bytes(encoded)
        fit_res.parameters = Parameters(tensors=[ndarray_to_bytes(a) for a in encoded],
                                        tensor_type=TENSOR_TYPE_PREFIX + codec)
        for key, record in compat.fitres_to_recorddict(fit_res, keep_input=True).items():
            out.content[key] = record  # replace the fitres.* records, keep anything else in the reply
        return out

    mod.__name__ = f"compression_mod_{codec}"
    return mod


# ------------------------------------------------------------------------------------ server side


def decode_fit_res(fit_res: FitRes, global_params: NDArrays) -> FitRes:
    """Replace an encoded FitRes' parameters by the full parameters (global + decoded update)."""
    tensor_type = fit_res.parameters.tensor_type
    if not tensor_type.startswith(TENSOR_TYPE_PREFIX):
        return fit_res
    codec = tensor_type[len(TENSOR_TYPE_PREFIX):]
    arrays = parameters_to_ndarrays(fit_res.parameters)
    delta = decode(arrays, codec, [g.shape for g in global_params])
    params = [(g.astype(np.float32) + d).astype(g.dtype) for g, d in zip(global_params, delta, strict=True)]
    fit_res.parameters = ndarrays_to_parameters(params)
    return fit_res


class CodecStrategy(Strategy):
    """Outermost strategy wrapper: decodes compressed client updates, then delegates everything.

    It remembers the global model each round's ``configure_fit`` sends (updates are relative to it)
    and rebuilds full parameters in ``aggregate_fit`` before the wrapped strategy (DP wrappers,
    FedAvg) sees any result.
    """

    def __init__(self, strategy: Strategy) -> None:
        super().__init__()
        self.strategy = strategy
        self._sent: dict[int, NDArrays] = {}

    def __repr__(self) -> str:
        return f"CodecStrategy({self.strategy!r})"

    def __getattr__(self, name: str) -> Any:  # e.g. PlanFedAvg attributes the apps read
        if name == "strategy":
            raise AttributeError(name)
        return getattr(self.strategy, name)

    def initialize_parameters(self, client_manager: ClientManager) -> Parameters | None:
        return self.strategy.initialize_parameters(client_manager)

    def configure_fit(self, server_round: int, parameters: Parameters,
                      client_manager: ClientManager) -> list[tuple[ClientProxy, Any]]:
        self._sent = {server_round: parameters_to_ndarrays(parameters)}
        return self.strategy.configure_fit(server_round, parameters, client_manager)

    def aggregate_fit(self, server_round: int, results: list[tuple[ClientProxy, FitRes]],
                      failures: list[Any]) -> tuple[Parameters | None, dict[str, Scalar]]:
        sent = self._sent.get(server_round)
        if sent is None:
            raise RuntimeError(f"CodecStrategy: round {server_round} was aggregated before it was configured")
        decoded = [(proxy, decode_fit_res(res, sent)) for proxy, res in results]
        return self.strategy.aggregate_fit(server_round, decoded, failures)

    def configure_evaluate(self, server_round: int, parameters: Parameters,
                           client_manager: ClientManager) -> list[tuple[ClientProxy, Any]]:
        return self.strategy.configure_evaluate(server_round, parameters, client_manager)

    def aggregate_evaluate(self, server_round: int, results: list[Any],
                           failures: list[Any]) -> tuple[float | None, dict[str, Scalar]]:
        return self.strategy.aggregate_evaluate(server_round, results, failures)

    def evaluate(self, server_round: int, parameters: Parameters) -> tuple[float, dict[str, Scalar]] | None:
        return self.strategy.evaluate(server_round, parameters)
