"""Privacy and compression for fedbw's Flower apps: one integration function per side.

Client (the ClientApp's mod stack)::

    mods = [measure_mod, *build_client_mods(cfg)]          # outermost first

Server (legacy path)::

    strategy = wrap_strategy(cfg, strategy)                # DP wrapper, then codec decoding outermost
    fit_workflow = build_fit_workflow(cfg)                 # None | GuardedSecAggPlusWorkflow | PackedSecAggPlusWorkflow
    workflow = DefaultWorkflow(fit_workflow=fit_workflow) if fit_workflow else DefaultWorkflow()

Mod order, and why (outermost first):

0. ``seeded_numpy_mod`` (with DP or SecAgg+) — seeds NumPy's global generator per message from the
   run's seed, so Flower's DP noise and SecAgg+'s stochastic rounding drawn inside are reproducible.
1. ``packed_secaggplus_mod`` / ``secaggplus_mod``, then ``secagg_bounds_mod`` — SecAgg+ runs four
   stages through the mod stack but only calls the inner app in ``collect_masked_vectors``; anything
   that needs a training message (DP clipping, LocalDpMod) must sit *inside* it, and it must see the
   final update to mask it. The bounds mod, right inside it, clips the weight to ``max_weight`` and
   counts the values the quantizer will clip.
2. ``compression_mod`` (never with SecAgg+) — encodes what the DP mod produced: quantizing after
   clipping/noising, so local-DP noise is post-processed and client-side clipping bounds still hold.
3. ``fixedclipping_mod`` / ``adaptiveclipping_mod`` / ``LocalDpMod`` — innermost: they see the
   trained parameters first and clip (and, for LocalDpMod, noise) them.
"""

from __future__ import annotations

from typing import Any

#: name -> module that defines it; imported on first use (each pulls in Flower). The ε accountant is
#: pure code and lives in :mod:`fedbw.privacy.accounting`.
_EXPORTS = {
    "build_client_mods": "fedbw.fl.privacy.wiring",
    "build_fit_workflow": "fedbw.fl.privacy.wiring",
    "wrap_strategy": "fedbw.fl.privacy.wiring",
    "PackedSecAggPlusWorkflow": "fedbw.fl.privacy.secagg_packed",
    "packed_secaggplus_mod": "fedbw.fl.privacy.secagg_packed",
    "GuardedSecAggPlusWorkflow": "fedbw.fl.privacy.bounds",
    "secagg_bounds_mod": "fedbw.fl.privacy.bounds",
    "seeded_numpy_mod": "fedbw.fl.privacy.bounds",
    "measure_secagg_costs": "fedbw.fl.privacy.costs",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fedbw.fl.privacy' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
