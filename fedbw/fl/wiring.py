"""The hook points where privacy and compression plug into the apps — one function per side.

* :func:`client_mods` — the ClientApp's mod stack, outermost first: ``measure_mod`` outermost (it sees
  the final reply, after masking, clipping or encoding, and times everything inside it), then
  :func:`fedbw.fl.privacy.build_client_mods` (SecAgg+ → codec → DP clipping/noise).
* :func:`fit_workflow` — the ServerApp's fit workflow: ``None`` = Flower's default FedAvg exchange,
  Flower's ``SecAggPlusWorkflow`` (stock) or fedbw's ``PackedSecAggPlusWorkflow`` (packed).
* :func:`wrap_strategy` — DP wrapper around the legacy strategy, codec decoding outermost.

The Flower-facing privacy wiring lives in :mod:`fedbw.fl.privacy`, the ε accounting in
:mod:`fedbw.privacy` (the plan carries its result: rounds to run and ε per round); this module only
adapts them to the apps.
"""

from __future__ import annotations

from typing import Callable

from flwr.app import Context, Message
from flwr.client.mod import make_ffn
from flwr.server.strategy import Strategy

from fedbw.fl import privacy
from fedbw.fl.measure import measure_mod
from fedbw.fl.settings import AppSettings, settings_for

ClientMod = Callable[[Message, Context, Callable[[Message, Context], Message]], Message]
Workflow = Callable[..., None]


def client_mods(settings: AppSettings) -> list[ClientMod]:
    """Mods for this run's ClientApp, outermost first."""
    return ([measure_mod] if settings.measure else []) + privacy.build_client_mods(settings.config)


def fit_workflow(settings: AppSettings) -> Workflow | None:
    """The server's fit workflow; ``None`` means Flower's default (plain FedAvg exchange)."""
    return privacy.build_fit_workflow(settings.config)


def wrap_strategy(settings: AppSettings, strategy: Strategy) -> Strategy:
    """DP wrapper around the strategy and codec decoding outermost (plain runs get it back as is).

    Flower's DP wrappers do not forward attribute lookups: callers keep their own reference to the
    strategy they passed in.
    """
    return privacy.wrap_strategy(settings.config, strategy)


def fedbw_mod(msg: Message, context: Context, call_next: Callable[[Message, Context], Message]) -> Message:
    """The one mod the ClientApp is built with: resolves this run's stack from the plan, then runs it.

    Flower fixes a ClientApp's mods at import time, before any plan is known; this indirection lets
    one importable app serve every configuration.
    """
    return make_ffn(call_next, client_mods(settings_for(context)))(msg, context)
