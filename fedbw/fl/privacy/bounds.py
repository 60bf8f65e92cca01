"""SecAgg+ that never wraps silently, and reproducible draws inside the client's mod stack.

* :func:`secagg_bounds_mod` sits right inside ``secaggplus_mod``: it clips the client's declared weight
  (``num_examples``) to ``max_weight`` — Flower's SecAgg+ contract, which Flower itself only warns about —
  so the prepended weight factor obeys the same n·T < M bound as the parameters, and it counts the
  values Flower's quantizer will clip (|r·x| > clipping_range). The count travels in the fit metrics
  (``fedbw.secagg.clipped``), beside the ``num_examples`` Flower already sends in clear.
* :class:`GuardedSecAggPlusWorkflow` is Flower's ``SecAggPlusWorkflow`` with one check before
  unmasking: from the weights the clients declared it computes how many values of the sum wrapped (or
  may have) mod M (:func:`fedbw.privacy.secagg_bounds.wrapped_values`); if any did, it halts the round
  (the model stays as it was, as when too many clients drop) instead of releasing a wrong aggregate,
  and either way it reports the round's cohort, clipped and wrapped counts to ``observer``.
* :func:`seeded_numpy_mod` seeds NumPy's global generator per message from the run's seed, round,
  client and stage, so ``LocalDpMod``'s noise and SecAgg+'s stochastic rounding are reproducible.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flwr.app import Context, Message
from flwr.app.message_type import MessageType
from flwr.clientapp.typing import ClientAppCallable
from flwr.common import parameters_to_ndarrays
from flwr.common.logger import log
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, RECORD_KEY_STATE, Key
from flwr.compat.common import recorddict_compat as compat
from flwr.server.compat.legacy_context import LegacyContext
from flwr.server.workflow import SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD
from flwr.server.workflow.constant import Key as WorkflowKey
from flwr.server.workflow.secure_aggregation.secaggplus_workflow import WorkflowState
from flwr.serverapp.grid import Grid

from fedbw.privacy.randomness import Randomness, seed_numpy_global
from fedbw.privacy.secagg_bounds import clip_weight, count_clipped, wrapped_values

#: Fit-metrics key of the values this client's update had clipped (weight clipping counts one).
CLIPPED_KEY = "fedbw.secagg.clipped"
_NUM_EXAMPLES = "fitres.num_examples"
_METRICS = "fitres.metrics"
_PARAMETERS = "fitres.parameters"


def secagg_bounds_mod(msg: Message, ctxt: Context, call_next: ClientAppCallable) -> Message:
    """Place directly inside ``secaggplus_mod``: clip the weight to max_weight, count clipped values.

    It acts only on the training reply SecAgg+ is about to mask, and reads ``max_weight``,
    ``clipping_range`` and the quantization range from the SecAgg+ state the server set up, so it agrees
    with what ``secaggplus_mod`` will do whatever the server configured.
    """
    reply = call_next(msg, ctxt)
    state = ctxt.state.config_records.get(RECORD_KEY_STATE)
    if (msg.metadata.message_type != MessageType.TRAIN or reply.has_error() or state is None
            or _NUM_EXAMPLES not in reply.content.metric_records):
        return reply
    max_weight, target = float(state["max_weight"]), int(state["target_range"])
    rec = reply.content.metric_records[_NUM_EXAMPLES]
    weight, weight_clipped = clip_weight(int(rec["num_examples"]), max_weight)
    rec["num_examples"] = weight
    arrays = parameters_to_ndarrays(compat.arrayrecord_to_parameters(
        reply.content.array_records[_PARAMETERS], keep_input=True))
    clipped = count_clipped(arrays, weight, max_weight, target, float(state["clipping_range"]))
    reply.content.config_records[_METRICS][CLIPPED_KEY] = clipped + int(weight_clipped)
    return reply


@dataclass(frozen=True)
class SecAggRound:
    """What the server learned about one SecAgg+ round before unmasking."""

    round: int
    cohort: int  #: clients whose masked vectors are in the sum
    clipped: int | None  #: Σ of the clients' clipped counts (None: no client reported one)
    wrapped: int  #: values of the sum that wrapped or may have (0: the aggregate is exact up to quantization)


Observer = Callable[[SecAggRound], None]


class GuardedSecAggPlusWorkflow(SecAggPlusWorkflow):
    """Flower's ``SecAggPlusWorkflow``, halting a round whose sum would wrap instead of releasing it.

    Same constructor as Flower's plus ``observer`` (called once per round that reaches the unmask stage).
    """

    def __init__(self, *args: Any, observer: Observer | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.observer = observer
        #: whether the last round stopped short of its unmask: a node kept fewer active share holders than the
        #: threshold (Flower logs "Secure aggregation halted." and leaves the model as it was); the wrap
        #: guard's own halt is not one (it is logged, and the round is recorded)
        self.halted = False

    def __call__(self, grid: Grid, context: Context) -> None:
        self.halted = True  # until the unmask stage completes
        super().__call__(grid, context)

    def unmask_stage(self, grid: Grid, context: LegacyContext, state: WorkflowState) -> bool:
        rnd = int(context.state.config_records[MAIN_CONFIGS_RECORD][WorkflowKey.CURRENT_ROUND])
        weights = [fitres.num_examples for _, fitres in state.legacy_results]
        clipped = [fitres.metrics.get(CLIPPED_KEY) for _, fitres in state.legacy_results]
        vector_len = sum(a.size for a in state.aggregate_ndarrays[1:]) if state.aggregate_ndarrays else 0
        wrapped = wrapped_values(weights, vector_len, state.max_weight, state.quantization_range, state.mod_range)
        if self.observer is not None:
            reported = [int(c) for c in clipped if c is not None]
            self.observer(SecAggRound(rnd, len(weights), sum(reported) if reported else None, wrapped))
        if wrapped:
            log(logging.ERROR, "SecAgg+ round %s: %s value(s) of the sum wrapped mod %s (declared weights %s exceed "
                    "max_weight %s?); the round is halted and the model is unchanged",
                rnd, wrapped, state.mod_range, sorted(set(weights))[-3:], state.max_weight)
            self.halted = False
            return False
        done = self._unmask(grid, context, state)
        self.halted = not done
        return done

    def _unmask(self, grid: Grid, context: LegacyContext, state: WorkflowState) -> bool:
        """Flower's unmask stage (a subclass may re-encode around it)."""
        return super().unmask_stage(grid, context, state)


def _stage(msg: Message) -> str:
    cfg = msg.content.config_records.get(RECORD_KEY_CONFIGS) if msg.has_content() else None
    if cfg is not None and Key.STAGE in cfg:
        return str(cfg[Key.STAGE])
    return msg.metadata.message_type


@dataclass(frozen=True)
class seeded_numpy_mod:  # a callable used like Flower's mods, hence named like one
    """A mod (outside SecAgg+ and DP mods) seeding NumPy's global generator per message.

    The label is (round = the message's group id, client = ``partition-id`` or else the node id, stage):
    the draws Flower makes from ``np.random`` while handling the message are then the same in every run
    of the config, whichever process serves the client. With ``randomness = "os"`` it does nothing.
    """

    seed: int
    randomness: Randomness = "seed"

    @property
    def __name__(self) -> str:  # Flower and fedbw's tests name mods by __name__
        return "seeded_numpy_mod"

    def __call__(self, msg: Message, ctxt: Context, call_next: ClientAppCallable) -> Message:
        client = ctxt.node_config.get("partition-id", ctxt.node_id)
        seed_numpy_global(self.randomness, self.seed, "client", msg.metadata.group_id, client, _stage(msg))
        return call_next(msg, ctxt)
