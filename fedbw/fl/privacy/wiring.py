"""The integration functions behind :mod:`fedbw.fl.privacy` (see that package's docstring for usage)."""


from __future__ import annotations

from typing import Any, Callable

from flwr.client.mod import LocalDpMod, adaptiveclipping_mod, fixedclipping_mod, secaggplus_mod
from flwr.server.strategy import (
    DifferentialPrivacyClientSideAdaptiveClipping,
    DifferentialPrivacyClientSideFixedClipping,
    DifferentialPrivacyServerSideAdaptiveClipping,
    DifferentialPrivacyServerSideFixedClipping,
    Strategy,
)
from fedbw.config import ExperimentConfig
from fedbw.fl.compress import CodecStrategy, compression_mod
from fedbw.fl.privacy.bounds import GuardedSecAggPlusWorkflow, Observer, secagg_bounds_mod, seeded_numpy_mod
from fedbw.fl.privacy.secagg_packed import PackedSecAggPlusWorkflow, packed_secaggplus_mod

Mod = Callable[..., Any]

__all__ = ["build_client_mods", "build_fit_workflow", "wrap_strategy"]


def _dp_client_mod(cfg: ExperimentConfig) -> Mod | None:
    dp = cfg.privacy.dp
    if not dp.enabled or dp.mode.startswith("central-server"):
        return None
    if dp.mode == "central-client-fixed":
        return fixedclipping_mod
    if dp.mode == "central-client-adaptive":
        return adaptiveclipping_mod
    # local: the server sees this client's own release, so any two datasets of the client must be
    # indistinguishable: two updates clipped to C differ by up to 2C in L2 (replace-one sensitivity).
    return LocalDpMod(clipping_norm=dp.clipping_norm, sensitivity=2 * dp.clipping_norm, epsilon=dp.local_epsilon,
                      delta=dp.local_delta)


def build_client_mods(cfg: ExperimentConfig) -> list[Mod]:
    """The privacy/compression mods of a run's ClientApp, outermost first (put measurement outside).

    With DP or SecAgg+ on, the first is :func:`~fedbw.fl.privacy.bounds.seeded_numpy_mod` (reproducible
    draws from NumPy's global generator, which Flower's DP noise and stochastic rounding use); with
    SecAgg+, :func:`~fedbw.fl.privacy.bounds.secagg_bounds_mod` sits right inside the SecAgg+ mod.
    """
    mods: list[Mod] = []
    sa, dp = cfg.privacy.secagg, cfg.privacy.dp
    if sa.enabled or dp.enabled:
        mods.append(seeded_numpy_mod(cfg.seed, cfg.privacy.randomness))
    if sa.enabled:
        mods += [packed_secaggplus_mod if sa.mode == "packed" else secaggplus_mod, secagg_bounds_mod]
    comp = cfg.compression
    if comp.codec != "none":
        mods.append(compression_mod(comp.codec, comp.topk_fraction, comp.error_feedback))
    dp_mod = _dp_client_mod(cfg)
    if dp_mod is not None:
        mods.append(dp_mod)
    return mods


def build_fit_workflow(cfg: ExperimentConfig, observer: Observer | None = None) -> GuardedSecAggPlusWorkflow | None:
    """The server's fit workflow for ``DefaultWorkflow(fit_workflow=...)``; None = Flower's default.

    Stock is Flower's ``SecAggPlusWorkflow`` behind fedbw's wrap guard (protocol and wire format
    unchanged); packed also re-encodes. ``observer`` gets each round's cohort, clipped and wrapped counts.
    """
    sa = cfg.privacy.secagg
    if not sa.enabled:
        return None
    cls = PackedSecAggPlusWorkflow if sa.mode == "packed" else GuardedSecAggPlusWorkflow
    return cls(num_shares=cfg.secagg_shares(), reconstruction_threshold=sa.reconstruction_threshold,
               max_weight=sa.max_weight, clipping_range=sa.clipping_range,
               quantization_range=sa.quantization_range, modulus_range=sa.modulus_range, timeout=sa.timeout_s,
               observer=observer)


def wrap_strategy(cfg: ExperimentConfig, strategy: Strategy) -> Strategy:
    """Wrap a legacy strategy: DP wrapper around it, then codec decoding outermost.

    Codec decoding must run before any DP wrapper looks at a client's parameters (server-side
    clipping measures update norms), hence outermost.
    """
    dp = cfg.privacy.dp
    if dp.enabled:
        m = cfg.clients.per_round
        if dp.mode == "central-server-fixed":
            strategy = DifferentialPrivacyServerSideFixedClipping(
                strategy, noise_multiplier=dp.noise_multiplier, clipping_norm=dp.clipping_norm, num_sampled_clients=m)
        elif dp.mode == "central-client-fixed":
            strategy = DifferentialPrivacyClientSideFixedClipping(
                strategy, noise_multiplier=dp.noise_multiplier, clipping_norm=dp.clipping_norm, num_sampled_clients=m)
        elif dp.mode == "central-server-adaptive":
            strategy = DifferentialPrivacyServerSideAdaptiveClipping(
                strategy, noise_multiplier=dp.noise_multiplier, num_sampled_clients=m,
                initial_clipping_norm=dp.clipping_norm, target_clipped_quantile=dp.target_clipped_quantile,
                clip_norm_lr=dp.clip_norm_lr)
        elif dp.mode == "central-client-adaptive":
            strategy = DifferentialPrivacyClientSideAdaptiveClipping(
                strategy, noise_multiplier=dp.noise_multiplier, num_sampled_clients=m,
                initial_clipping_norm=dp.clipping_norm, target_clipped_quantile=dp.target_clipped_quantile,
                clip_norm_lr=dp.clip_norm_lr)
    if cfg.compression.codec != "none":
        strategy = CodecStrategy(strategy)
    return strategy
