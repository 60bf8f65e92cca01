"""docs/privacy-overhead.md's cell-by-cell table: per cell and variant on the study's first profile, the
bytes per SecAgg+ stage, link and Flower time, the server's CPU, the round and whether Flower completes it."""

from __future__ import annotations

from fedbw.calibration.file import load_costs, model_stamp
from fedbw.report.privacy_cells_table import privacy_cells_markdown


def _row(kind: str, n: int, profile: str = "home-30", **extra: object) -> dict:
    return {"variant": f"{kind}@{n}", "kind": kind, "cell": {"clients.per_round": n}, "profile": profile,
            "bytes_up_per_client": 1_000_000.0, "bytes_down_per_client": 2_000_000.0, "comm_time_s": 1.5,
            "framework_time_s": 6.0, "round_time_s": 8.0, "round_interval_s": [7.0, 9.0], "round_ratio": 1.0,
            "framework_parts_s": {"server_aggregate_s": 0.002}, **extra}


def test_each_cell_and_variant_on_the_first_profile_in_the_grids_order() -> None:
    secagg = {"bytes_per_stage": {"setup": [500.0, 1040.0], "share_keys": [1800.0, 1860.0],
                                  "collect_masked_vectors": [2e6, 1.1e6], "unmask": [410.0, 805.0]},
              "framework_parts_s": {"server_aggregate_s": 0.002, "server_extra_s": 0.0375},
              "round_ratio": 3.87, "round_completes": 0.084}
    data = {"grid": {"clients.per_round": [10, 100]}, "baseline": "plain", "profiles": ["home-30", "home-80"],
            "made_by": model_stamp(load_costs(None)),
            "rows": [_row("plain", 100), _row("plain", 10), _row("drop30", 10, **secagg),
                     _row("plain", 10, profile="home-80")]}
    text = privacy_cells_markdown(data)
    lines = [line for line in text.splitlines() if line.startswith("| 10") or line.startswith("| 100")]
    assert [line.split(" | ")[0:2] for line in lines] == [["| 10", "plain"], ["| 10", "drop30"], ["| 100", "plain"]]
    assert ("| 10 | drop30 | 1.00 MB | 2.00 MB | setup 1.04 kB · keys 1.86 kB · masked 1.10 MB · unmask 805 B "
            "| 1.50 s | 6.00 s | 2.00 ms + 37.50 ms | 8.00 s [7.00–9.00] | 3.87× | 8 % |") in text
    assert "| 10 | plain | 1.00 MB | 2.00 MB | - | 1.50 s | 6.00 s | 2.00 ms | 8.00 s [7.00–9.00] | 1.00× | always |" in text
    assert "On home-30" in text and "home-80" not in text.split("\n\n")[0]
