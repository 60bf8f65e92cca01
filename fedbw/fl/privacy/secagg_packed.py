"""Packed SecAgg+: Flower's own SecAgg+ protocol with a leaner wire format.

Stock Flower 1.42 SecAgg+ pays twice on the wire:

* the client's masked vector is ``np.save``-d as **int64** — 8 B per parameter, 2× a float32 upload —
  although every masked value is already reduced below ``modulus_range`` (default 2^32);
* the server dequantizes the unmasked sum into **float64**, and that aggregate becomes the next
  global model, so every later download is 2× as well.

Here nothing of the protocol changes (keys, Shamir shares, masks, quantization all stay Flower's):

* :func:`packed_secaggplus_mod` wraps ``secaggplus_mod`` on the client and re-encodes the masked
  vector it produced as the smallest unsigned integer type holding values < modulus (uint32 for
  2^32, uint16 for ≤ 2^16, ...). Masked values are uniform in [0, modulus), so the packing loses
  nothing and reveals nothing more than the int64 encoding did.
* :class:`PackedSecAggPlusWorkflow` (a ``SecAggPlusWorkflow``) widens those vectors back to int64 as
  they arrive, before Flower sums and unmasks them, and casts the aggregate back to the dtypes of the
  global model it sent (float32), so downloads stay 4 B per parameter.

Clients running plain ``secaggplus_mod`` still work against the packed workflow (int64 widens to
int64), so a mixed fleet aggregates correctly; it just does not save bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from flwr.app import ArrayRecord, Context, Message
from flwr.app.message_type import MessageType
from flwr.client.mod import secaggplus_mod
from flwr.clientapp.typing import ClientAppCallable
from flwr.common import bytes_to_ndarray, ndarray_to_bytes, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.compat.common import recorddict_compat as compat
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, RECORD_KEY_STATE, Key
from flwr.server.compat.legacy_context import LegacyContext
from flwr.server.workflow.constant import MAIN_PARAMS_RECORD
from flwr.server.workflow.secure_aggregation.secaggplus_workflow import WorkflowState
from flwr.serverapp.grid import Grid

from fedbw.fl.privacy.bounds import GuardedSecAggPlusWorkflow


def packed_dtype(modulus_range: int) -> np.dtype:
    """Smallest unsigned integer dtype that holds every value in [0, modulus_range)."""
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        if modulus_range - 1 <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    raise ValueError(f"modulus_range {modulus_range} does not fit 64 bits")


def pack_masked_vector(blobs: Iterable[bytes], modulus_range: int) -> list[bytes]:
    """Re-encode Flower's int64 masked arrays (``np.save`` bytes) in the packed dtype."""
    dtype = packed_dtype(modulus_range)
    out = []
    for blob in blobs:
        arr = bytes_to_ndarray(blob)
        if arr.size and (arr.min() < 0 or arr.max() >= modulus_range):
            raise ValueError("masked value outside [0, modulus_range): the vector was not reduced mod the modulus")
        out.append(ndarray_to_bytes(arr.astype(dtype, copy=False)))
    return out


def unpack_masked_vector(blobs: Iterable[bytes]) -> list[bytes]:
    """Widen packed masked arrays back to int64, the dtype Flower's unmasking arithmetic expects."""
    out = []
    for blob in blobs:
        arr = bytes_to_ndarray(blob)
        out.append(blob if arr.dtype == np.int64 else ndarray_to_bytes(arr.astype(np.int64)))
    return out


def packed_secaggplus_mod(msg: Message, ctxt: Context, call_next: ClientAppCallable) -> Message:
    """``secaggplus_mod`` whose masked-vector reply travels packed (e.g. uint32 instead of int64).

    Use it *in place of* ``secaggplus_mod``, at the same position in the ClientApp's mods.
    """
    reply = secaggplus_mod(msg, ctxt, call_next)
    if msg.metadata.message_type != MessageType.TRAIN or reply.has_error():
        return reply
    cfg = reply.content.config_records.get(RECORD_KEY_CONFIGS)
    if cfg is None or Key.MASKED_PARAMETERS not in cfg:
        return reply
    modulus_range = int(ctxt.state.config_records[RECORD_KEY_STATE]["mod_range"])
    cfg[Key.MASKED_PARAMETERS] = pack_masked_vector(cfg[Key.MASKED_PARAMETERS], modulus_range)
    return reply


class _UnpackingGrid(Grid):
    """Delegates to a Grid; widens packed masked vectors in the replies before Flower reads them."""

    def __init__(self, grid: Grid) -> None:
        self._grid = grid

    def __getattr__(self, name: str) -> Any:
        return getattr(self._grid, name)

    def set_run(self, run: Any) -> None:
        self._grid.set_run(run)

    @property
    def run(self) -> Any:
        return self._grid.run

    def create_message(self, *args: Any, **kwargs: Any) -> Message:
        return self._grid.create_message(*args, **kwargs)

    def get_node_ids(self) -> Iterable[int]:
        return self._grid.get_node_ids()

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        return self._grid.push_messages(messages)

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        return [self._unpack(m) for m in self._grid.pull_messages(message_ids)]

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        return [self._unpack(m) for m in self._grid.send_and_receive(messages, timeout=timeout)]

    @staticmethod
    def _unpack(msg: Message) -> Message:
        if msg.has_error():
            return msg
        cfg = msg.content.config_records.get(RECORD_KEY_CONFIGS)
        if cfg is not None and Key.MASKED_PARAMETERS in cfg:
            cfg[Key.MASKED_PARAMETERS] = unpack_masked_vector(cfg[Key.MASKED_PARAMETERS])
        return msg


def _record_ndarrays(record: ArrayRecord) -> list[np.ndarray]:
    return parameters_to_ndarrays(compat.arrayrecord_to_parameters(record, keep_input=True))


def _cast_record(record: ArrayRecord, dtypes: list[np.dtype]) -> ArrayRecord:
    """The global-model record with each array cast back to the dtype it had before aggregation."""
    arrays = _record_ndarrays(record)
    if len(arrays) != len(dtypes) or all(a.dtype == d for a, d in zip(arrays, dtypes)):
        return record
    cast = [a.astype(d, copy=False) for a, d in zip(arrays, dtypes)]
    return compat.parameters_to_arrayrecord(ndarrays_to_parameters(cast), keep_input=True)


class PackedSecAggPlusWorkflow(GuardedSecAggPlusWorkflow):
    """``SecAggPlusWorkflow`` that accepts packed masked vectors and keeps the global model's dtypes.

    Same constructor as Flower's (plus the guard's ``observer``); plug it in exactly where the stock
    workflow goes: ``DefaultWorkflow(fit_workflow=PackedSecAggPlusWorkflow(...))``. Like the stock
    workflow fedbw runs (:class:`~fedbw.fl.privacy.bounds.GuardedSecAggPlusWorkflow`), it halts a round
    whose sum would wrap.
    """

    def collect_masked_vectors_stage(self, grid: Grid, context: LegacyContext, state: WorkflowState) -> bool:
        return super().collect_masked_vectors_stage(_UnpackingGrid(grid), context, state)

    def _unmask(self, grid: Grid, context: LegacyContext, state: WorkflowState) -> bool:
        before = context.state.array_records[MAIN_PARAMS_RECORD]
        dtypes = [a.dtype for a in _record_ndarrays(before)]
        ok = super()._unmask(grid, context, state)
        after = context.state.array_records[MAIN_PARAMS_RECORD]
        if after is not before:  # the strategy produced a new global model: give it back its dtypes
            context.state.array_records[MAIN_PARAMS_RECORD] = _cast_record(after, dtypes)
        return ok
