"""docs/fidelity.md's emulation table says when its emulate runs are older than the table (``--reuse``)."""

from __future__ import annotations

import json
from pathlib import Path

from fedbw.report.doc_tables import emulation_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_the_emulation_table_names_reused_runs_and_their_start() -> None:
    data = json.loads((ROOT / "benchmarks" / "results" / "agreement-emulation.json").read_text(encoding="utf-8"))
    data["reused"] = [{"name": "emulation-2", "engine": "emulate", "run_dir": "emulation-2-emulate-x",
                       "started_utc": "2026-12-03T00:16:27Z"}]
    text = emulation_markdown(data)
    assert "Reused from an earlier run" in text and "00:16" in text
    data["reused"] = []
    assert "Reused from an earlier run" not in emulation_markdown(data)
