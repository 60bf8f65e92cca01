"""What SecAgg+ costs in CPU seconds, per stage, as a function of clients, shares and vector length.

Bytes are only half of SecAgg+'s overhead: every client generates keys, shares and encrypts secrets and
expands one mask per neighbour, and the server reconstructs secrets and regenerates masks — more of
them for every client that drops out. This module turns per-primitive constants, fitted on a machine
by :func:`fedbw.fl.privacy.costs.measure_secagg_costs` (``benchmarks/secagg_costs.py`` writes them to
``benchmarks/results/secagg-costs.json``), into seconds per stage. Counts follow Flower 1.42's code
(``secaggplus_mod``, ``SecAggPlusWorkflow``); with k = shares − 1 neighbours and L values (parameters
+ 1 weight factor):

client
  setup                   2 key pairs (SECP384R1)
  share_keys              Shamir-split 2 secrets into ``shares`` shares of threshold t (pycryptodome
                          evaluates a degree t − 1 polynomial per share: ∝ shares·t); k × (ECDH + encrypt)
  collect_masked_vectors  k × Fernet decrypt; quantize L (weight scaling, clip, stochastic rounding);
                          (k + 1) × mask expansion of L (PRG); k × ECDH; (k + 1) × add L; one mod M of L
  unmask                  (look-ups only)
server
  collect_masked_vectors  (n − 1) × add L (the masked sum); one mod M of L
  unmask                  (server_unmask_parts) per surviving client: combine its seed from the shares its surviving
                          neighbours (and itself) hold, expand and subtract its mask;
                          per dropped client: combine its key from its surviving neighbours' shares,
                          then per neighbour ECDH + expand + add its pairwise mask; one mod M of L;
                          dequantize L

Flower adds and subtracts without the modulus and reduces once per vector (``parameters_mod`` after the
loop), so an add and the mod are separate constants (until 2026-12-06 every add was charged with its mod,
and the server's dequantization at the client's quantization; docs/privacy.md).

Combining m shares (pycryptodome's Lagrange interpolation, per 16-byte chunk of the secret) costs one
field inversion per share and m² multiplications: a·m + b·m², with no fixed part (measured on this VM
from 2 to 33 shares: the linear part dominates below about 10). How many shares the server has depends on
who dropped: a node's neighbours are a fresh uniform draw each round (Flower shuffles its ring), so the
number of dropped neighbours is hypergeometric, and the model takes the combine's expectation over it.

Pure arithmetic: no Flower, no torch.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

STAGES = ("setup", "share_keys", "collect_masked_vectors", "unmask")


@dataclass(frozen=True)
class SecAggCostConstants:
    """Seconds per primitive on one machine (fitted; ``machine`` says where)."""

    keygen_s: float  #: one SECP384R1 key pair, serialized
    ecdh_s: float  #: one shared key: load the keys, ECDH, HKDF
    encrypt_s: float  #: Fernet-encrypt one share pair
    decrypt_s: float
    share_split_s: float  #: Shamir-split a client's two secrets (mask seed, key): fixed part …
    share_split_per_share_threshold_s: float  #: … + this × shares × threshold
    combine_seed_per_share_s: float  #: combine a surviving client's mask seed (32 B) from m shares: this × m …
    combine_seed_per_share_sq_s: float  #: … + this × m²
    combine_key_per_share_s: float  #: combine a dropped client's private key (306 B, ≈ 10× the seed's chunks)
    #: from m shares (the mean over which shares: pycryptodome's cost depends on their x): this × m …
    combine_key_per_share_sq_s: float  #: … + this × m²
    prg_s: float  #: expand one mask: fixed part …
    prg_per_value_s: float  #: … + this per value
    quantize_per_value_s: float  #: the client's weight scaling + clip + stochastic rounding, per value
    add_per_value_s: float  #: one int64 vector add or subtract (Flower reduces mod M once per vector, not per add)
    mod_per_value_s: float  #: one vector's reduction mod M (``parameters_mod``)
    dequantize_per_value_s: float  #: the server's dequantization of the unmasked sum
    client_stage_overhead_s: float = 0.0  #: the mod's own bookkeeping per stage (state in and out)
    server_per_client_s: float = 0.0  #: building and routing one client's message per stage
    machine: str = ""
    measured: str = ""  #: when (UTC)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SecAggCostConstants:
        """The constants from their JSON; ValueError for constants of an earlier form (:func:`earlier_form`)."""
        if why := earlier_form(data):
            raise ValueError(why)
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


#: Fields of the combine's earlier form (a fixed part + shares², fitted on combines from every share),
#: which overcharged a dropped client about twice at 3 shares (docs/privacy-overhead.md, 2026-12-05).
_OLD_COMBINE = frozenset({"combine_seed_s", "combine_key_s"})
#: Fields that constants of the vector arithmetic's earlier form (every add with its mod, the server's
#: dequantization charged at the client's quantization; before 2026-12-06 09:00 UTC) lack beside their add.
_VECTOR_FORM = frozenset({"mod_per_value_s", "dequantize_per_value_s"})


def earlier_form(data: Mapping[str, Any]) -> str | None:
    """Why SecAgg+ constants (their JSON or TOML table) are of a form this model no longer reads, with how to
    measure them again; None when they are of the current form."""
    if _OLD_COMBINE & set(data):
        what = "the combine's earlier form (combine_seed_s, combine_key_s)"
    elif "add_per_value_s" in data and _VECTOR_FORM - set(data):
        what = "the vector arithmetic's earlier form (no mod_per_value_s, dequantize_per_value_s)"
    else:
        return None
    return (f"SecAgg+ constants of {what}; measure them again, in about a minute: `fedbw calibrate "
            f"--from-messages NAME.messages.jsonl --measure-secagg --out NAME.toml`")


def _prg(c: SecAggCostConstants, values: int) -> float:
    return c.prg_s + c.prg_per_value_s * values


def _split(c: SecAggCostConstants, shares: int, threshold: int) -> float:
    return c.share_split_s + c.share_split_per_share_threshold_s * shares * threshold


def _combine(per_share_s: float, per_share_sq_s: float, shares: int) -> float:
    """Combining ``shares`` shares: one field inversion per share and shares² multiplications."""
    return per_share_s * shares + per_share_sq_s * shares**2


def _combine_seed(c: SecAggCostConstants, shares: int) -> float:
    return _combine(c.combine_seed_per_share_s, c.combine_seed_per_share_sq_s, shares)


def _combine_key(c: SecAggCostConstants, shares: int) -> float:
    return _combine(c.combine_key_per_share_s, c.combine_key_per_share_sq_s, shares)


def lost_neighbours(others: int, lost: int, neighbours: int, most: int) -> list[tuple[int, float]]:
    """(j, probability) that j of a node's ``neighbours`` are among the ``lost`` of the ``others`` nodes
    (hypergeometric: Flower draws every node's neighbours afresh each round), given j ≤ ``most`` (a node
    left with fewer shares than the threshold halts the round, which then has no unmask to pay for).
    When no j ≤ ``most`` is possible, the unconditioned distribution."""
    total = math.comb(others, neighbours)
    dist = [(j, math.comb(lost, j) * math.comb(others - lost, neighbours - j) / total)
            for j in range(max(0, neighbours - (others - lost)), min(lost, neighbours) + 1)]
    kept = [(j, p) for j, p in dist if j <= most]
    mass = sum(p for _, p in kept)
    return [(j, p / mass) for j, p in kept] if mass > 0 else dist


def default_threshold(shares: int) -> int:
    """A majority of the shares (what the measurement uses when no threshold is given)."""
    return shares // 2 + 1


def client_stage_s(stage: str, shares: int, vector_len: int, c: SecAggCostConstants,
                   threshold: int | None = None) -> float:
    """One client's CPU seconds in ``stage`` (``vector_len`` = model parameters; the weight factor is added)."""
    k, values = shares - 1, vector_len + 1
    base = c.client_stage_overhead_s
    if stage == "setup":
        return base + 2 * c.keygen_s
    if stage == "share_keys":
        t = default_threshold(shares) if threshold is None else threshold
        return base + _split(c, shares, t) + k * (c.ecdh_s + c.encrypt_s)
    if stage == "collect_masked_vectors":
        return (base + k * (c.decrypt_s + c.ecdh_s) + c.quantize_per_value_s * values
                + (k + 1) * (_prg(c, values) + c.add_per_value_s * values) + c.mod_per_value_s * values)
    if stage == "unmask":
        return base
    raise ValueError(f"unknown SecAgg+ stage {stage!r}; stages are {', '.join(STAGES)}")


def server_stage_s(stage: str, clients: int, shares: int, vector_len: int, c: SecAggCostConstants,
                   dropped: int = 0, threshold: int | None = None) -> float:
    """The server's CPU seconds in ``stage`` for ``clients`` sampled, ``dropped`` of them lost after the
    share exchange (their masked vectors never came, so their pairwise masks must be regenerated), in a
    round that completes (``threshold``: the reconstruction threshold, a majority of the shares if None)."""
    _check_dropped(clients, dropped)
    values, alive = vector_len + 1, clients - dropped
    if stage in ("setup", "share_keys"):
        return clients * c.server_per_client_s  # the server only forwards keys and ciphertexts
    if stage == "collect_masked_vectors":  # the first vector starts the sum: alive − 1 adds
        return clients * c.server_per_client_s + ((alive - 1) * c.add_per_value_s + c.mod_per_value_s) * values
    if stage == "unmask":
        return sum(part.seconds for part in server_unmask_parts(clients, shares, vector_len, c, dropped,
                                                                threshold).values())
    raise ValueError(f"unknown SecAgg+ stage {stage!r}; stages are {', '.join(STAGES)}")


def _check_dropped(clients: int, dropped: int) -> None:
    if not 0 <= dropped < clients:
        raise ValueError(f"dropped ({dropped}) must be in 0..clients-1 ({clients - 1})")


class UnmaskPart(NamedTuple):
    """One kind of work in the server's unmask stage: how many times Flower's workflow does it (expected over
    who dropped) and the seconds all of them take."""

    calls: float
    seconds: float


def server_unmask_parts(clients: int, shares: int, vector_len: int, c: SecAggCostConstants, dropped: int = 0,
                        threshold: int | None = None) -> dict[str, UnmaskPart]:
    """The server's unmask stage part by part (its sum is :func:`server_stage_s`'s ``unmask``), in the names a
    traced real round files its calls under (``fedbw.fl.privacy.costs.SERVER_PRIMITIVES``), so each part can
    be checked against Flower's: ``combine_seed``, ``combine_key``, ``prg`` (mask expansions), ``ecdh``,
    ``add`` (vector adds and subtracts), ``mod`` (once, after them), ``dequantize`` and ``bookkeeping`` (per
    survivor).

    A survivor's seed comes back from the shares of its neighbourhood's survivors (its own included); a
    dropped client's key from its surviving neighbours' (its own share is lost with it); Flower combines
    every share it collected, so each dropped neighbour means one share fewer. Every dropped client's k
    pairwise masks are expanded again, its dropped neighbours' included (Flower loops over all of them)."""
    _check_dropped(clients, dropped)
    k, values = shares - 1, vector_len + 1
    alive, pairs = clients - dropped, dropped * k
    t = default_threshold(shares) if threshold is None else threshold
    seed = sum(p * _combine_seed(c, shares - j)
               for j, p in lost_neighbours(clients - 1, dropped, k, shares - t)) if alive else 0.0
    key = sum(p * _combine_key(c, k - j)
              for j, p in lost_neighbours(clients - 1, dropped - 1, k, k - t)) if dropped else 0.0
    masks = alive + pairs
    return {"combine_seed": UnmaskPart(alive, alive * seed), "combine_key": UnmaskPart(dropped, dropped * key),
            "prg": UnmaskPart(masks, masks * _prg(c, values)), "ecdh": UnmaskPart(pairs, pairs * c.ecdh_s),
            "add": UnmaskPart(masks, masks * c.add_per_value_s * values),
            "mod": UnmaskPart(1, c.mod_per_value_s * values),
            "dequantize": UnmaskPart(1, c.dequantize_per_value_s * values),
            "bookkeeping": UnmaskPart(alive, alive * c.server_per_client_s)}


def client_round_s(shares: int, vector_len: int, c: SecAggCostConstants,
                   threshold: int | None = None) -> dict[str, float]:
    """One client's CPU seconds per stage of a round."""
    return {s: client_stage_s(s, shares, vector_len, c, threshold) for s in STAGES}


def server_round_s(clients: int, shares: int, vector_len: int, c: SecAggCostConstants,
                   dropped: int = 0, threshold: int | None = None) -> dict[str, float]:
    """The server's CPU seconds per stage of a round."""
    return {s: server_stage_s(s, clients, shares, vector_len, c, dropped, threshold) for s in STAGES}


# ------------------------------------------------------------------------------------ fitting


@dataclass
class PrimitiveSamples:
    """Timings of one machine: per primitive, (size, seconds) pairs (size: shares·threshold for splits,
    shares combined for combines, values for vector operations; 0 for fixed-size ones)."""

    samples: dict[str, list[tuple[int, float]]] = field(default_factory=dict)

    def add(self, primitive: str, size: int, seconds: float) -> None:
        self.samples.setdefault(primitive, []).append((int(size), float(seconds)))


def fit_line(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope) through (x, y), clamped at ≥ 0 (a cost is never negative)."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    if len(set(xs)) < 2:
        return max(0.0, statistics.median(ys)), 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    slope = max(0.0, slope)
    return max(0.0, my - slope * mx), slope


def fit_linear_and_square(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (a, b) of y = a·x + b·x² through the origin, each ≥ 0: where the joint fit gives one
    a negative value, that one is 0 and the other is fitted alone."""
    sxx = sum(x * x for x, _ in points)
    sx3 = sum(x**3 for x, _ in points)
    sx4 = sum(x**4 for x, _ in points)
    sxy = sum(x * y for x, y in points)
    sx2y = sum(x * x * y for x, y in points)
    det = sxx * sx4 - sx3 * sx3
    if det > 0:
        a, b = (sxy * sx4 - sx2y * sx3) / det, (sx2y * sxx - sxy * sx3) / det
        if a >= 0 and b >= 0:
            return a, b
    only_a = sxy / sxx if sxx else 0.0
    only_b = sx2y / sx4 if sx4 else 0.0
    err_a = sum((y - only_a * x) ** 2 for x, y in points)
    err_b = sum((y - only_b * x * x) ** 2 for x, y in points)
    return (max(0.0, only_a), 0.0) if err_a <= err_b else (0.0, max(0.0, only_b))


def typical_per_size(points: Iterable[tuple[int, float]]) -> list[tuple[int, float]]:
    """The median sample per size. A real round pays a typical call, not the best one: against the fastest
    of five calls in a row, Flower's mask expansion cost 1.35× and its ECDH 1.21× in rounds of the same
    moment (docs/privacy-overhead.md, 2026-12-06). The samples are CPU time, so a moment the host took the
    CPU away is not in them, and each comes from a separate pass over every primitive, so a slow spell of the
    host lands on one sample per size, which the median discards."""
    by_size: dict[int, list[float]] = {}
    for size, secs in points:
        by_size.setdefault(size, []).append(secs)
    return sorted((size, statistics.median(secs)) for size, secs in by_size.items())


def _median(points: Iterable[tuple[int, float]]) -> float:
    return statistics.median(secs for _, secs in typical_per_size(points))


def fit_constants(samples: PrimitiveSamples, machine: str = "", measured: str = "") -> SecAggCostConstants:
    """The constants of :class:`SecAggCostConstants` from measured samples: per size the median of the
    passes, then a least-squares line over sizes.

    ``client_stage`` and ``server_client`` samples (the bookkeeping of a real round's stage) are optional.
    """
    s = {name: typical_per_size(points) for name, points in samples.samples.items()}
    split0, split1 = fit_line(s["share_split"])
    seed1, seed2 = fit_linear_and_square(s["combine_seed"])
    key1, key2 = fit_linear_and_square(s["combine_key"])
    prg0, prg1 = fit_line(s["prg"])
    per_value = {name: fit_line(s[name])[1] for name in ("quantize", "add", "mod", "dequantize")}
    return SecAggCostConstants(
        keygen_s=_median(s["keygen"]), ecdh_s=_median(s["ecdh"]), encrypt_s=_median(s["encrypt"]),
        decrypt_s=_median(s["decrypt"]), share_split_s=split0, share_split_per_share_threshold_s=split1,
        combine_seed_per_share_s=seed1, combine_seed_per_share_sq_s=seed2, combine_key_per_share_s=key1,
        combine_key_per_share_sq_s=key2, prg_s=prg0, prg_per_value_s=prg1,
        quantize_per_value_s=per_value["quantize"], add_per_value_s=per_value["add"],
        mod_per_value_s=per_value["mod"], dequantize_per_value_s=per_value["dequantize"],
        client_stage_overhead_s=_median(s["client_stage"]) if s.get("client_stage") else 0.0,
        server_per_client_s=_median(s["server_client"]) if s.get("server_client") else 0.0,
        machine=machine, measured=measured)
