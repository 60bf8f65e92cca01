"""docs/privacy.md, "What SecAgg+ costs in CPU time": Flower's SecAgg+ primitives as timed on this machine,
the combine's candidate forms compared on sizes left out of their fit, and the stage model against real
rounds, from ``benchmarks/results/secagg-costs.json`` (``benchmarks/secagg_costs.py``)."""

from __future__ import annotations

import statistics
from typing import Any

from fedbw.report.doc_blocks import md_table, result_table

COSTS_CMD = ".venv/bin/python benchmarks/secagg_costs.py"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _per(seconds: float, unit: str) -> str:
    """A per-unit cost in the unit that keeps it readable (ns or µs)."""
    return f"{seconds * 1e9:.3g} ns{unit}" if seconds < 1e-6 else f"{seconds * 1e6:.3g} µs{unit}"


def _primitives(c: dict[str, Any]) -> str:
    rows = [
        ["SECP384R1 key pair (generate + serialize)", _ms(c["keygen_s"])],
        ["ECDH + HKDF shared key", _ms(c["ecdh_s"])],
        ["Fernet encrypt / decrypt of one share pair", f"{_ms(c['encrypt_s'])} / {_ms(c['decrypt_s'])}"],
        ["Shamir split of a client's two secrets (shares n, threshold t)",
         f"{_ms(c['share_split_s'])} + {_ms(c['share_split_per_share_threshold_s'])} × n·t"],
        ["combine a survivor's seed from m shares",
         f"{_ms(c['combine_seed_per_share_s'])} × m + {_ms(c['combine_seed_per_share_sq_s'])} × m²"],
        ["combine a dropped client's key from m shares",
         f"{_ms(c['combine_key_per_share_s'])} × m + {_ms(c['combine_key_per_share_sq_s'])} × m²"],
        ["mask expansion (PRG)", f"{_ms(c['prg_s'])} + {_per(c['prg_per_value_s'], ' per value')}"],
        ["quantization (client) / dequantization (server)", f"{_per(c['quantize_per_value_s'], '')} / "
                                                             f"{_per(c['dequantize_per_value_s'], '')} per value"],
        ["int64 add / reduction mod M (once per vector)", f"{_per(c['add_per_value_s'], '')} / "
                                                          f"{_per(c['mod_per_value_s'], '')} per value"],
        ["the mod's bookkeeping per stage / the server's per client and stage",
         f"{_ms(c['client_stage_overhead_s'])} / {_ms(c['server_per_client_s'])}"],
    ]
    return md_table(["primitive", "cost"], rows)


def _forms(forms: dict[str, Any]) -> str:
    names = [k for k in forms["combine_seed"] if k != "sizes"]
    rows = []
    for name in names:
        line = [name]
        for combine in ("combine_seed", "combine_key"):
            errors = [abs(e) for e in forms[combine][name]]
            line.append(f"{100 * statistics.median(errors):.1f} % ({100 * max(errors):.0f} %)")
        rows.append(line)
    sizes = {k: ", ".join(map(str, forms[k]["sizes"])) for k in ("combine_seed", "combine_key")}
    return (md_table(["form (m: shares combined)", "seed: median |error| (largest)", "key: median |error| (largest)"],
                     rows, right={1, 2})
            + f"\nEach size left out of the fit in turn and predicted from the others (seed: m = {sizes['combine_seed']}; "
              f"key: m = {sizes['combine_key']}). Lowest median |error|: {_best(forms, 'combine_seed')} (seed), "
              f"{_best(forms, 'combine_key')} (key).\n")


def _best(forms: dict[str, Any], combine: str) -> str:
    errors = {k: statistics.median(abs(e) for e in v) for k, v in forms[combine].items() if k != "sizes"}
    return min(errors, key=errors.__getitem__)


def _rounds(rows: list[dict[str, Any]]) -> str:
    out = []
    for r in rows:
        cm, cp, sm, sp = (r["client_measured_s"], r["client_model_s"], r["server_measured_s"], r["server_model_s"])
        out.append([str(r["clients"]), str(r["shares"]), f"{r['vector_len']:,}", str(r["dropped"]),
                    *(f"{cm[s] * 1e3:.1f} / {cp[s] * 1e3:.1f}" for s in ("share_keys", "collect_masked_vectors")),
                    *(f"{sm[s] * 1e3:.1f} / {sp[s] * 1e3:.1f}" for s in ("collect_masked_vectors", "unmask"))])
    return md_table(["clients", "shares", "values", "drop", "client share_keys", "client collect", "server collect",
                     "server unmask"], out, right=set(range(8)))


@result_table("privacy.secagg-costs", "secagg-costs.json", COSTS_CMD, needs="combine_forms", model=True)
def secagg_costs_markdown(data: dict[str, Any]) -> str:
    """The primitives, the combine's forms and the stage model against real rounds (ms, measured / model)."""
    c = data["constants"]
    return (_primitives(c)
            + f"\nCPU time, the median of {data['repeats']} passes over every primitive, measured "
              f"{c.get('measured', '?')} on {c.get('machine', '?')}.\n\n"
            + _forms(data["combine_forms"]) + "\n"
            + _rounds(data["rounds"])
            + "\nCPU milliseconds per round, measured / model (the median of the repeats; vectors of the given "
              "length; \"drop\": clients lost after the share exchange, whose keys and pairwise masks the server "
              "rebuilds).\n")
