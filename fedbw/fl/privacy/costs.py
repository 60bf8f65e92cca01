"""Measure what Flower's SecAgg+ primitives cost on this machine, and fit the cost model's constants.

Times Flower 1.42's own functions — the ones ``secaggplus_mod`` and ``SecAggPlusWorkflow`` call —
with ``time.perf_counter``: SECP384R1 key-pair generation, ECDH + HKDF shared keys, Fernet
encryption of a share pair, Shamir split and combine (pycryptodome, per 16-byte chunk in a thread
pool), mask expansion (``pseudo_rand_gen``: NumPy's Mersenne Twister), quantization and the int64
vector arithmetic. :func:`fedbw.netmodel.secagg_cost.fit_constants` turns the samples into the
constants the stage model (:mod:`fedbw.netmodel.secagg_cost`) uses. ``benchmarks/secagg_costs.py``
runs this and writes ``benchmarks/results/secagg-costs.json``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import statistics
import time
import timeit
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flwr.app import Context, Message
from flwr.common.secure_aggregation.crypto.shamir import combine_shares, create_shares
from flwr.common.secure_aggregation.crypto.symmetric_encryption import decrypt, encrypt, generate_shared_key
from flwr.common.secure_aggregation.ndarrays_arithmetic import (
    factor_combine,
    factor_extract,
    parameters_addition,
    parameters_mod,
    parameters_multiply,
)
from flwr.common.secure_aggregation.quantization import dequantize, quantize
from flwr.common.secure_aggregation.secaggplus_utils import pseudo_rand_gen, share_keys_plaintext_concat
from flwr.supercore.primitives.asymmetric import (
    bytes_to_private_key,
    bytes_to_public_key,
    generate_key_pairs,
    private_key_to_bytes,
    public_key_to_bytes,
)

from fedbw.netmodel.secagg_cost import PrimitiveSamples, SecAggCostConstants, fit_constants

#: Sizes the full measurement sweeps (the quick one, for tests and calibrate --quick, takes the first two).
SHARES = (3, 5, 7, 9, 13, 17)
VECTOR_LENGTHS = (10_000, 100_000, 1_000_000)


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Python's cyclic garbage collector held off, as ``timeit`` does: a full collection in a process that
    has loaded torch and Flower takes tens of milliseconds, which would land on whichever timing it hits
    (a round of the 10-client unmask at 81.5 ms of CPU time among others of 31.5 to 45 ms, 2026-12-06)."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def cpu_seconds(fn: Callable[[], object]) -> float:
    """One call's CPU time (``timeit`` with this process's CPU clock: the collector held off). CPU time, as
    the real rounds are timed, so that a moment the host takes the CPU away is not charged to the call."""
    return timeit.timeit(fn, timer=_cpu, number=1)


def _mean_over_missing(shares: list[bytes]) -> float:
    """Combining all but one of ``shares``: the mean over which one is missing, each combined once."""
    return statistics.fmean(cpu_seconds(lambda sh=shares[:i] + shares[i + 1:]: combine_shares(sh))
                            for i in range(len(shares)))


def machine_description() -> str:
    """CPU model, cores and Python: where the constants were measured."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPU(s), {platform.system()} {platform.machine()}, Python {platform.python_version()}"


@no_gc()
def measure_secagg_samples(repeats: int = 5, shares: Sequence[int] = SHARES,
                           vector_lengths: Sequence[int] = VECTOR_LENGTHS, modulus_range: int = 2**32,
                           quantization_range: int = 2**22, clipping_range: float = 8.0) -> PrimitiveSamples:
    """Time every SecAgg+ primitive as Flower 1.42 calls it, in ``repeats`` passes over all of them (per
    share count and vector length where they matter), each call in CPU time.

    Passes rather than ``repeats`` calls in a row: a slow spell of the shared host then lands on one
    sample of every primitive instead of on every sample of one, which the per-size median
    (:func:`fedbw.netmodel.secagg_cost.fit_constants`) discards (three timings of the add in a row, on
    2026-12-06, gave 1.4, 2.7 and 3.7 ns a value). The vector arithmetic is Flower's: adds and subtracts
    without the modulus, one ``parameters_mod`` per vector, the client's quantization (weight scaling,
    quantize, the weight's factor) and the server's dequantization apart.

    Each call is timed alone, after calls of other primitives: that is how the server's unmask loop pays
    them, and the unmask stage is where SecAgg+'s CPU time is. A client's loops call one primitive several
    times in a row, which costs less, so its stages come out high (up to about 1.5×, docs/privacy.md); a
    warm call before each timing put the clients right and the server's unmask low in every cell (a probe on
    2026-12-06, kept in the closing note, not here)."""
    calls = _primitive_calls(shares, vector_lengths, modulus_range, quantization_range, clipping_range)
    s = PrimitiveSamples()
    for _ in range(repeats):
        for name, size, fn in calls:
            s.add(name, size, fn())
    return s


def _primitive_calls(shares: Sequence[int], vector_lengths: Sequence[int], modulus_range: int,
                     quantization_range: int, clipping_range: float) -> list[tuple[str, int, Callable[[], float]]]:
    """(primitive, size, one timing) for every sample of a pass; the inputs made once, outside the timings."""
    sk_b = private_key_to_bytes(generate_key_pairs()[0])
    peer_pk = public_key_to_bytes(generate_key_pairs()[1])
    key = generate_shared_key(bytes_to_private_key(sk_b), bytes_to_public_key(peer_pk))
    seed = os.urandom(32)
    plaintext = share_keys_plaintext_concat(2**62, 2**62 + 1, create_shares(seed, 2, 3)[0], create_shares(sk_b, 2, 3)[0])
    token = encrypt(key, plaintext)

    def keygen() -> None:  # what _setup does per key pair: generate, serialize both halves
        sk, pk = generate_key_pairs()
        private_key_to_bytes(sk), public_key_to_bytes(pk)

    calls: list[tuple[str, int, Callable[[], float]]] = [
        ("keygen", 0, lambda: cpu_seconds(keygen)),
        ("ecdh", 0, lambda: cpu_seconds(lambda: generate_shared_key(bytes_to_private_key(sk_b),
                                                               bytes_to_public_key(peer_pk)))),
        ("encrypt", 0, lambda: cpu_seconds(lambda: encrypt(key, plaintext))),
        ("decrypt", 0, lambda: cpu_seconds(lambda: decrypt(key, token)))]
    for n in shares:
        threshold = n // 2 + 1
        seed_shares, key_shares = create_shares(seed, threshold, n), create_shares(sk_b, threshold, n)
        # each client splits two secrets: its mask seed (32 B) and its key sk1
        calls.append(("share_split", n * threshold,
                      lambda t=threshold, n=n: cpu_seconds(lambda: (create_shares(seed, t, n), create_shares(sk_b, t, n)))))
        # the server combines every share it collected: a survivor's seed from its neighbourhood's
        # survivors (all n, or n − 1 when a neighbour dropped), a dropped client's key from its n − 1
        # neighbours, its own share lost with it. Which share is missing matters: pycryptodome's combine
        # is about 9× faster for the two shares at x = 2 and 3 (n = 3, a 306-byte key: 1.1 ms against
        # 9.4 ms), so a combine from n − 1 is timed with each share missing in turn, and the sample is
        # the mean over which one.
        calls += [("combine_seed", n, lambda sh=seed_shares: cpu_seconds(lambda: combine_shares(sh))),
                  ("combine_seed", n - 1, lambda sh=seed_shares: _mean_over_missing(sh)),
                  ("combine_key", n - 1, lambda sh=key_shares: _mean_over_missing(sh))]
    rng = np.random.default_rng(0)
    for n_values in vector_lengths:
        x = [rng.normal(0, 1, n_values).astype(np.float32)]
        a = [np.array([7]), rng.integers(0, modulus_range, n_values, dtype=np.int64)]
        b = [np.array([9]), rng.integers(0, modulus_range, n_values, dtype=np.int64)]
        dims = [arr.shape for arr in a]
        calls += [
            ("prg", n_values, lambda dims=dims: cpu_seconds(lambda: pseudo_rand_gen(seed, modulus_range, dims))),
            ("quantize", n_values, lambda x=x: cpu_seconds(lambda: factor_combine(
                123, quantize(parameters_multiply(x, 0.5), clipping_range, quantization_range)))),
            ("add", n_values, lambda a=a, b=b: cpu_seconds(lambda: parameters_addition(a, b))),
            ("mod", n_values, lambda a=a: cpu_seconds(lambda: parameters_mod(a, modulus_range))),
            ("dequantize", n_values, lambda a=a: cpu_seconds(lambda: dequantize(
                factor_extract(a)[1], clipping_range, quantization_range)))]
    return calls


def measure_secagg_costs(repeats: int = 5, quick: bool = False) -> SecAggCostConstants:
    """The cost model's constants for this machine (``quick``: fewer sizes, ≈ 2 s instead of ≈ 35 s).

    Besides the primitives, it runs ``repeats`` tiny real rounds (3 clients, 1,000 values): the client's
    unmask stage, which does no crypto, measures the mod's own per-stage bookkeeping, and the server's
    setup stage, which only routes, its per-client cost.
    """
    samples = (measure_secagg_samples(repeats, SHARES[:2], VECTOR_LENGTHS[:2]) if quick
               else measure_secagg_samples(repeats))
    for _ in range(repeats):
        tiny = measure_secagg_round(3, 3, 1000)
        samples.add("client_stage", 0, tiny.client_s["unmask"])
        samples.add("server_client", 0, tiny.server_s["setup"] / 3)
    return fit_constants(samples, machine=machine_description(),
                         measured=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


# ------------------------------------------------------------------------------ a real round, timed


@dataclass
class RoundCosts:
    """CPU seconds per stage of one real SecAgg+ round: mean per client, and the server's."""

    clients: int
    shares: int
    threshold: int
    vector_len: int
    dropped: int
    client_s: dict[str, float] = field(default_factory=dict)
    server_s: dict[str, float] = field(default_factory=dict)
    #: the stage at which the server's workflow gave up (a stage returned False: e.g. a dropped client whose
    #: share holders dropped too, below the threshold), None when every stage finished. A stage that gave
    #: up stopped part-way: its time is not the stage's cost.
    halted_at: str | None = None
    #: with ``trace``: per server stage, per primitive the workflow called (:data:`SERVER_PRIMITIVES`), one
    #: (size, CPU seconds) per call; what the stage's time is made of, call by call
    server_calls: dict[str, dict[str, list[tuple[int, float]]]] = field(default_factory=dict)


#: What Flower 1.42's SecAgg+ server workflow calls by these names, looked up in its module at call time, and
#: the name a traced round files each call under. A combine is a mask seed's (32 bytes: 3 chunks of 16 once
#: padded) or a dropped client's private key's (306 bytes: 20 chunks): the two cost 7× apart per share.
SERVER_PRIMITIVES = ("combine_shares", "pseudo_rand_gen", "generate_shared_key", "bytes_to_private_key",
                     "bytes_to_public_key", "parameters_addition", "parameters_subtraction", "parameters_mod",
                     "dequantize")
#: Chunks of 16 bytes at or below which a combine is a seed's
SEED_CHUNKS = 3


#: How a traced call is filed: under the model's part it belongs to (fedbw.netmodel.secagg_cost.
#: server_unmask_parts), or, for the calls that only add time to a part (loading the keys of an ECDH),
#: under a name of their own that :func:`unmask_parts` folds into it.
_FILED = {"pseudo_rand_gen": "prg", "generate_shared_key": "ecdh", "bytes_to_private_key": "ecdh_key_load",
          "bytes_to_public_key": "ecdh_key_load", "parameters_addition": "add", "parameters_subtraction": "add",
          "parameters_mod": "mod", "dequantize": "dequantize", "aggregate_fit": "aggregate_fit"}
_FOLDED = {"ecdh_key_load": "ecdh"}


def _call_name_and_size(name: str, args: tuple[Any, ...]) -> tuple[str, int]:
    """How a traced call is filed: combines by secret (seed or key) with the shares combined as size; vector
    operations with their values; the rest with 0."""
    if name == "combine_shares":
        chunks = (len(args[0][0]) - 4) >> 4
        return ("combine_seed" if chunks <= SEED_CHUNKS else "combine_key"), len(args[0])
    if name == "pseudo_rand_gen":
        return "prg", sum(int(np.prod(shape)) for shape in args[2])
    if name in ("parameters_addition", "parameters_subtraction", "parameters_mod", "dequantize"):
        return _FILED[name], sum(int(np.asarray(a).size) for a in args[0])
    return _FILED[name], 0


def unmask_parts(costs: RoundCosts) -> dict[str, tuple[int, float]]:
    """A traced round's unmask stage in the model's parts: (calls, CPU seconds) per part; ``aggregate_fit``
    (FedAvg over the replies, which the model counts as the stage's aggregation, not here) and
    ``bookkeeping``: the stage's time outside every traced call (building messages, collecting shares)."""
    if "unmask" not in costs.server_calls:
        raise ValueError("a round measured without trace=True, or one that never reached the unmask stage")
    parts: dict[str, tuple[int, float]] = {}
    for name, calls in costs.server_calls["unmask"].items():
        part = _FOLDED.get(name, name)
        n, secs = parts.get(part, (0, 0.0))
        parts[part] = (n + (0 if name in _FOLDED else len(calls)), secs + sum(s for _, s in calls))
    traced = sum(secs for _, secs in parts.values())
    parts["bookkeeping"] = (0, costs.server_s["unmask"] - traced)
    return parts


@contextlib.contextmanager
def _traced_server(stage_now: dict[str, str], calls: dict[str, dict[str, list[tuple[int, float]]]],
                   strategy: Any) -> Iterator[None]:
    """Every :data:`SERVER_PRIMITIVES` call of the SecAgg+ workflow, and its strategy's ``aggregate_fit``
    (which the unmask stage runs: FedAvg reads every reply's parameters again), timed in CPU time and filed
    under the stage running; the workflow's module is restored afterwards."""
    import flwr.server.workflow.secure_aggregation.secaggplus_workflow as workflow_module

    def traced(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            t0 = _cpu()
            try:
                return fn(*args, **kwargs)
            finally:
                secs = _cpu() - t0
                filed, size = _call_name_and_size(name, args)
                calls.setdefault(stage_now["stage"], {}).setdefault(filed, []).append((size, secs))
        return call

    saved = {name: getattr(workflow_module, name) for name in SERVER_PRIMITIVES}
    for name, fn in saved.items():
        setattr(workflow_module, name, traced(name, fn))
    strategy.aggregate_fit = traced("aggregate_fit", strategy.aggregate_fit)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(workflow_module, name, fn)
        del strategy.aggregate_fit


def measure_secagg_round(clients: int, shares: int, vector_len: int, threshold: int | None = None,
                         dropped: int = 0, modulus_range: int = 2**32, quantization_range: int = 2**22,
                         trace: bool = False) -> RoundCosts:
    """Run one round of Flower's SecAgg+ on the loopback grid and time each stage's crypto (``trace``: also
    each primitive the server's workflow calls, :attr:`RoundCosts.server_calls`).

    Client: the time inside ``secaggplus_mod`` minus the app's own (training) time. Server: each stage
    of ``SecAggPlusWorkflow`` minus the time it waits in ``send_and_receive`` (where the in-process
    clients run and messages are serialized). ``dropped`` clients go silent after the share exchange.
    Times are the process's CPU time (what the model counts): on a shared VM a stage of tens of
    milliseconds is otherwise at the mercy of the moments the host takes the CPU away (10 clients, 1
    dropped, 2026-12-06: six rounds' unmask stages took 32.8 to 83.1 ms of wall time)."""
    from flwr.client import NumPyClient
    from flwr.client.mod import secaggplus_mod
    from flwr.clientapp import ClientApp
    from flwr.common import ndarrays_to_parameters
    from flwr.server.strategy import FedAvg
    from flwr.server.workflow import SecAggPlusWorkflow

    from fedbw.fl.privacy.loopback import LoopbackGrid, run_legacy, stage_of

    t = threshold if threshold is not None else shares // 2 + 1
    outer: dict[tuple[int, str], float] = {}
    inner: dict[tuple[int, str], float] = {}

    def timer(store: dict[tuple[int, str], float], stage_from: Callable[[Message], str]):
        def mod(msg: Message, ctxt: Context, call_next: Callable[[Message, Context], Message]) -> Message:
            key = (ctxt.node_id, stage_from(msg))
            t0 = _cpu()
            try:
                return call_next(msg, ctxt)
            finally:
                store[key] = store.get(key, 0.0) + _cpu() - t0
        return mod

    arrays = [np.random.default_rng(1).normal(0, 0.1, vector_len).astype(np.float32)]

    class Fixed(NumPyClient):
        def fit(self, parameters, config):  # type: ignore[no-untyped-def]
            return arrays, 100, {}

    last_stage: dict[int, str] = {}

    def remember(msg: Message) -> str:
        last_stage[msg.metadata.dst_node_id] = stage_of(msg)
        return last_stage[msg.metadata.dst_node_id]

    app = ClientApp(client_fn=lambda ctx: Fixed().to_client(),
                    mods=[timer(outer, remember), secaggplus_mod,
                          timer(inner, lambda m: last_stage.get(m.metadata.dst_node_id, ""))])
    silent: set[int] = set()

    def drop(node_id: int, group: str, stage: str) -> bool:
        if stage == "collect_masked_vectors" and len(silent) < dropped:
            silent.add(node_id)
        return node_id in silent and stage in ("collect_masked_vectors", "unmask")

    waited = {"s": 0.0}

    class Timed(SecAggPlusWorkflow):
        pass

    server: dict[str, float] = {}
    halted: dict[str, str | None] = {"at": None}
    stage_now = {"stage": ""}
    calls: dict[str, dict[str, list[tuple[int, float]]]] = {}

    def timed_stage(stage: str) -> Callable[..., bool]:
        original = getattr(SecAggPlusWorkflow, f"{stage}_stage")

        def timed(self: Any, grid: Any, context: Any, state: Any) -> bool:
            waited["s"] = 0.0
            stage_now["stage"] = stage
            t0 = _cpu()
            ok = original(self, _WaitTimer(grid, waited), context, state)
            server[stage] = _cpu() - t0 - waited["s"]
            if not ok and halted["at"] is None:
                halted["at"] = stage
            return bool(ok)

        return timed

    for stage in ("setup", "share_keys", "collect_masked_vectors", "unmask"):
        setattr(Timed, f"{stage}_stage", timed_stage(stage))

    grid = LoopbackGrid(app, clients, drop=drop)
    wf = Timed(num_shares=shares, reconstruction_threshold=t, quantization_range=quantization_range,
               modulus_range=modulus_range)
    strategy = FedAvg(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=clients,
                      min_available_clients=clients, initial_parameters=ndarrays_to_parameters(arrays))
    with no_gc(), (_traced_server(stage_now, calls, strategy) if trace else contextlib.nullcontext()):
        run_legacy(grid, strategy, 1, wf)
    per_stage: dict[str, list[float]] = {}
    for (nid, stage), secs in outer.items():
        if nid in silent and stage in ("collect_masked_vectors", "unmask"):
            continue
        per_stage.setdefault(stage, []).append(secs - inner.get((nid, stage), 0.0))
    return RoundCosts(clients, shares, t, vector_len, dropped,
                      client_s={k: float(np.mean(v)) for k, v in per_stage.items()}, server_s=server,
                      halted_at=halted["at"], server_calls=calls)


def _cpu() -> float:
    """This process's CPU time, every thread (Flower's Shamir combine runs in a thread pool)."""
    return time.process_time()


class _WaitTimer:
    """Delegates to a Grid, adding the time spent in ``send_and_receive`` to ``waited["s"]``."""

    def __init__(self, grid: Any, waited: dict[str, float]) -> None:
        self._grid, self._waited = grid, waited

    def __getattr__(self, name: str) -> Any:
        return getattr(self._grid, name)

    def send_and_receive(self, messages: Any, *, timeout: float | None = None) -> Any:
        t0 = _cpu()
        try:
            return list(self._grid.send_and_receive(messages, timeout=timeout))
        finally:
            self._waited["s"] += _cpu() - t0
