"""The SecAgg+ CPU-cost model counts the primitives Flower's code runs, stage by stage."""

from __future__ import annotations

import dataclasses

import pytest

from fedbw.netmodel.secagg_cost import (
    STAGES,
    PrimitiveSamples,
    SecAggCostConstants,
    client_round_s,
    client_stage_s,
    fit_constants,
    fit_line,
    fit_linear_and_square,
    lost_neighbours,
    server_round_s,
    server_stage_s,
    server_unmask_parts,
)

ZERO = SecAggCostConstants(**{f.name: 0.0 for f in dataclasses.fields(SecAggCostConstants)
                              if f.type in ("float", float)})


def only(**kw) -> SecAggCostConstants:
    return dataclasses.replace(ZERO, **kw)


def test_client_counts_per_stage():
    shares, length = 5, 1000  # k = 4 neighbours, 1,001 values with the weight factor
    assert client_round_s(shares, length, only(keygen_s=1)) == {"setup": 2, "share_keys": 0,
                                                                "collect_masked_vectors": 0, "unmask": 0}
    assert client_stage_s("share_keys", shares, length, only(ecdh_s=1)) == 4
    assert client_stage_s("collect_masked_vectors", shares, length, only(ecdh_s=1)) == 4  # pairwise masks
    assert client_stage_s("share_keys", shares, length, only(share_split_per_share_threshold_s=1), threshold=3) == 15
    assert client_stage_s("collect_masked_vectors", shares, length, only(prg_s=1)) == 5  # own + 4 pairwise
    assert client_stage_s("collect_masked_vectors", shares, length, only(prg_per_value_s=1)) == 5 * 1001
    assert set(client_round_s(shares, length, only(client_stage_overhead_s=1)).values()) == {1}
    # Flower adds its own mask and 4 pairwise ones without the modulus, then reduces the vector once
    assert client_stage_s("collect_masked_vectors", shares, length, only(add_per_value_s=1)) == 5 * 1001
    assert client_stage_s("collect_masked_vectors", shares, length, only(mod_per_value_s=1)) == 1001
    assert client_stage_s("collect_masked_vectors", shares, length, only(dequantize_per_value_s=1)) == 0
    with pytest.raises(ValueError, match="stages are"):
        client_stage_s("fit", shares, length, ZERO)


def test_server_regenerates_masks_for_every_dropped_client():
    n, shares, length = 10, 5, 1000
    assert server_stage_s("unmask", n, shares, length, only(prg_s=1)) == 10  # each survivor's own mask
    assert server_stage_s("unmask", n, shares, length, only(prg_s=1), dropped=2) == 8 + 2 * 4  # + pairwise
    assert server_stage_s("unmask", n, shares, length, only(ecdh_s=1), dropped=2) == 2 * 4
    assert server_stage_s("unmask", n, shares, length, only(combine_key_per_share_sq_s=1), dropped=1) == 4**2
    # a survivor's seed from its neighbourhood's survivors: 4 of the 9 others are its neighbours, so the one
    # dropped client is among them with chance 4/9, and its seed then comes from 4 shares instead of 5
    assert server_stage_s("unmask", n, shares, length, only(combine_seed_per_share_sq_s=1),
                          dropped=1) == pytest.approx(9 * (5 / 9 * 25 + 4 / 9 * 16))
    assert server_stage_s("unmask", n, shares, length, only(combine_seed_per_share_s=1)) == 10 * 5
    # the first of the 7 masked vectors starts the sum: 6 adds, then one reduction
    assert server_stage_s("collect_masked_vectors", n, shares, length, only(add_per_value_s=1), dropped=3) == 6 * 1001
    assert server_stage_s("collect_masked_vectors", n, shares, length, only(mod_per_value_s=1), dropped=3) == 1001
    assert server_round_s(n, shares, length, only(keygen_s=1)) == dict.fromkeys(STAGES, 0.0)  # clients make keys
    with pytest.raises(ValueError, match="dropped"):
        server_stage_s("unmask", n, shares, length, ZERO, dropped=n)


def test_the_unmask_stage_is_the_sum_of_its_parts_each_with_flowers_count():
    n, shares, length, dropped = 10, 5, 1000, 2
    parts = server_unmask_parts(n, shares, length, only(prg_s=1, ecdh_s=1, add_per_value_s=1, mod_per_value_s=2,
                                                        dequantize_per_value_s=3, quantize_per_value_s=99), dropped)
    calls = {name: part.calls for name, part in parts.items()}
    assert calls == {"combine_seed": 8, "combine_key": 2, "prg": 8 + 2 * 4, "ecdh": 2 * 4, "add": 8 + 2 * 4,
                     "mod": 1, "dequantize": 1, "bookkeeping": 8}
    assert parts["prg"].seconds == 16 and parts["ecdh"].seconds == 8 and parts["add"].seconds == 16 * 1001
    # the server dequantizes at its own cost, not the client's quantization's
    assert parts["mod"].seconds == 2 * 1001 and parts["dequantize"].seconds == 3 * 1001
    some = dataclasses.replace(ZERO, **{f.name: 1e-3 * (i + 1) for i, f in enumerate(dataclasses.fields(ZERO))
                                        if f.type in ("float", float)})
    for d in (0, 1, 3):
        total = sum(part.seconds for part in server_unmask_parts(n, shares, length, some, d).values())
        assert total == pytest.approx(server_stage_s("unmask", n, shares, length, some, d), rel=1e-12)


def test_fit_takes_the_median_pass_per_size_and_a_line_over_sizes():
    assert fit_line([(1, 3.0), (2, 5.0), (3, 7.0)]) == pytest.approx((1.0, 2.0))
    assert fit_line([(1, 2.0), (1, 4.0)]) == (3.0, 0.0)
    s = PrimitiveSamples()
    for name in ("keygen", "ecdh", "encrypt", "decrypt"):
        for secs in (0.5, 0.1, 0.2):  # a round pays a typical call: neither the fastest nor the slow spell
            s.add(name, 0, secs)
    for i, name in enumerate(("share_split", "prg", "quantize", "add", "mod", "dequantize")):
        for x in (10, 20, 30):
            s.add(name, x, 1.0 + 0.01 * (i + 1) * x)
            s.add(name, x, 9.0)
            s.add(name, x, 0.0)
    for name in ("combine_seed", "combine_key"):
        for m in (2, 4, 8, 16):
            s.add(name, m, 0.003 * m + 0.0004 * m * m)
            s.add(name, m, 9.0)
            s.add(name, m, 0.0)
    c = fit_constants(s, machine="m")
    assert c.keygen_s == c.ecdh_s == 0.2 and c.machine == "m"
    assert (c.prg_s, c.prg_per_value_s) == pytest.approx((1.0, 0.02))
    assert (c.quantize_per_value_s, c.add_per_value_s, c.mod_per_value_s,
            c.dequantize_per_value_s) == pytest.approx((0.03, 0.04, 0.05, 0.06))
    assert (c.combine_key_per_share_s, c.combine_key_per_share_sq_s) == pytest.approx((0.003, 0.0004))
    assert c.client_stage_overhead_s == 0.0
    assert SecAggCostConstants.from_json(c.to_json()) == c


def test_a_nodes_lost_neighbours_are_a_hypergeometric_draw_given_the_round_completes():
    dist = lost_neighbours(9, 3, 4, most=4)  # 4 neighbours among 9 others, 3 of them dropped
    assert sum(p for _, p in dist) == pytest.approx(1)
    assert sum(j * p for j, p in dist) == pytest.approx(4 * 3 / 9)  # the hypergeometric mean
    kept = dict(lost_neighbours(9, 3, 4, most=1))  # more than 1 lost halts the round: it costs nothing
    assert set(kept) == {0, 1} and sum(kept.values()) == pytest.approx(1)
    assert kept[1] / kept[0] == pytest.approx(dict(dist)[1] / dict(dist)[0])
    assert lost_neighbours(4, 2, 4, most=4) == [(2, 1.0)]  # every other node a neighbour: no draw
    assert lost_neighbours(9, 3, 4, most=-1) == dist  # no completing round: unconditioned


def test_the_combine_is_fitted_as_linear_and_square_through_the_origin_never_negative():
    assert fit_linear_and_square([(m, 2 * m + 0.5 * m * m) for m in (2, 3, 5, 9)]) == pytest.approx((2, 0.5))
    a, b = fit_linear_and_square([(m, 3 * m - 0.01 * m * m) for m in (2, 4, 8)])  # concave: no square term
    assert b == 0 and a > 0


@pytest.mark.parametrize("change, says", [({"combine_seed_s": 0.001, "combine_key_s": 0.01}, "combine's earlier"),
                                          ({"mod_per_value_s": None}, "vector arithmetic's earlier"),
                                          ({"dequantize_per_value_s": None}, "vector arithmetic's earlier")])
def test_constants_of_an_earlier_form_are_refused_with_the_command_that_measures_them(change: dict, says: str):
    old = {k: v for k, v in {**ZERO.to_json(), **change}.items() if v is not None}
    with pytest.raises(ValueError, match=f"{says}.*--measure-secagg"):
        SecAggCostConstants.from_json(old)
