"""The hook points where privacy and compression plug into the apps — one function per side.

* :func:`client_mods` — the ClientApp's mod stack, outermost first. ``measure_mod`` stays outermost so
  it sees the final reply (after masking, clipping or encoding) and times everything inside it.
* :func:`fit_workflow` — the ServerApp's fit workflow: ``None`` = Flower's default FedAvg exchange,
  or Flower's own ``SecAggPlusWorkflow`` when ``privacy.secagg`` is enabled (stock mode).
* :func:`wrap_strategy` — a chance to wrap the legacy strategy (e.g. DP wrappers) before it runs.
* :func:`round_epsilon` — ε spent after each round (a DP accountant), logged with the round's end.

Packed SecAgg+, DP wrappers, ε accounting and codecs (fedbw/fl/privacy, fedbw/fl/compress*) extend
these three functions; nothing else in the apps needs to change.
"""

from __future__ import annotations

from typing import Callable

from flwr.app import Context, Message
from flwr.client.mod import make_ffn, secaggplus_mod
from flwr.server.strategy import Strategy

from fedbw.errors import ConfigError
from fedbw.fl.measure import measure_mod
from fedbw.fl.settings import AppSettings, settings_for

ClientMod = Callable[[Message, Context, Callable[[Message, Context], Message]], Message]
Workflow = Callable[..., None]


def client_mods(settings: AppSettings) -> list[ClientMod]:
    """Mods for this run's ClientApp, outermost first."""
    mods: list[ClientMod] = []
    if settings.measure:
        mods.append(measure_mod)
    sa = settings.config.privacy.secagg
    if sa.enabled:
        if sa.mode != "stock":
            raise ConfigError(f'privacy.secagg.mode = "{sa.mode}" is not wired into the Flower apps yet; '
                              'use mode = "stock" with engine simulate/emulate, or engine = "estimate"')
        mods.append(secaggplus_mod)
    return mods


def fit_workflow(settings: AppSettings) -> Workflow | None:
    """The server's fit workflow; ``None`` means Flower's default (plain FedAvg exchange)."""
    sa = settings.config.privacy.secagg
    if not sa.enabled:
        return None
    if sa.mode != "stock":
        raise ConfigError(f'privacy.secagg.mode = "{sa.mode}" is not wired into the Flower apps yet; '
                          'use mode = "stock"')
    from flwr.server.workflow import SecAggPlusWorkflow

    return SecAggPlusWorkflow(num_shares=sa.num_shares, reconstruction_threshold=sa.reconstruction_threshold,
                              max_weight=sa.max_weight, clipping_range=sa.clipping_range,
                              quantization_range=sa.quantization_range, modulus_range=sa.modulus_range,
                              timeout=sa.timeout_s)


def wrap_strategy(settings: AppSettings, strategy: Strategy) -> Strategy:
    """Wrap the legacy strategy (DP wrappers go here); plain runs use it as is."""
    return strategy


def round_epsilon(settings: AppSettings) -> Callable[[int], float | None] | None:
    """``f(round) -> ε`` after that round, or ``None`` when the run spends no privacy budget."""
    return None


def fedbw_mod(msg: Message, context: Context, call_next: Callable[[Message, Context], Message]) -> Message:
    """The one mod the ClientApp is built with: resolves this run's stack from the plan, then runs it.

    Flower fixes a ClientApp's mods at import time, before any plan is known; this indirection lets
    one importable app serve every configuration.
    """
    return make_ffn(call_next, client_mods(settings_for(context)))(msg, context)
