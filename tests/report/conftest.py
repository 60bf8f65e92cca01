"""Run directories written by hand for the report tests, and headless Chromium for the browser test.

Why hand-written runs: an emulate run with host records and a link series, or a run whose accuracy
crosses a target at a known time, takes minutes to produce for real; records written here carry
exactly the figures a test asserts on (the engines' own records are tested in tests/engines/).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from fedbw.catalog import get_model
from fedbw.config import load_config
from fedbw.engines.estimate import estimate_fabrics
from fedbw.results.compared import write_allreduce
from fedbw.config.loading import config_to_dict
from fedbw.results.host_record import HostRound
from fedbw.results.records import ClientRoundRecord, RecordWriter, RoundRecord, StageRecord
from fedbw.shaper.series import LinkSeries, Sample

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "experiments" / "quickstart.toml"


def write_run(run_dir: Path, *, engine: str = "simulate", profile: str = "home-30", up_s: float = 1.0,
              compute_s: float = 0.5, accuracies: tuple[float, ...] = (0.5, 0.7, 0.9), sets: tuple[str, ...] = (),
              host_shares: tuple[float, ...] | None = None, series: bool = False,
              server_link_s: float | None = None) -> Path:
    """A finished run of two clients: each round 0.2 s download, ``compute_s``, ``up_s`` upload; the
    round's accuracy from ``accuracies``; emulate extras (host shares, a link series) when asked."""
    run_dir.mkdir(parents=True)
    cfg = load_config(QUICKSTART, [f"network.profile={profile}", f'engine="{engine}"', *sets])
    (run_dir / "resolved_config.json").write_text(json.dumps(config_to_dict(cfg)))
    dc = cfg.datacenter  # what the runner records of the data-center side
    write_allreduce(run_dir, cfg.model.name, estimate_fabrics(get_model(cfg.model.name).params, dc.fabrics, dc.ranks,
                                                              dc.grad_bytes_per_value))
    with RecordWriter(run_dir / "records.jsonl", run_id=run_dir.name, engine=engine) as w:
        for i, acc in enumerate(accuracies, start=1):
            stages = [StageRecord("fit", 1e6, 2e6, 0.2, compute_s, up_s)]
            host = None if host_shares is None else HostRound(lost_s=host_shares[i - 1], share=host_shares[i - 1])
            total = 0.2 + compute_s + up_s
            w.write([ClientRoundRecord(run_dir.name, engine, i, c, profile, stages) for c in (0, 1)])
            w.write([RoundRecord(run_dir.name, engine, i, 2, total, 0.2 + up_s, compute_s, 0.0, {"fit": total},
                                 2e6, 4e6, loss=1 - acc, accuracy=acc, host=host,
                                 extra={} if server_link_s is None else {"server_link_s": server_link_s})])
    if series:
        s = LinkSeries(["0", "1"], t0_s=0.0)
        for cid in ("0", "1"):
            for k in range(1, 6):
                s.add(cid, "up", Sample(0.1 * k, 400_000 * k, 400_000 * k, 0.1 * k, 0.1 * k))
                s.add(cid, "down", Sample(0.1 * k, 200_000 * k, 200_000 * k, 0.1 * k, 0.1 * k))
        (run_dir / "emulate-logs").mkdir()
        s.dump(run_dir / "emulate-logs" / "link-series.jsonl")
    return run_dir


@pytest.fixture
def browser_module():
    """tests/report/browser.py (pytest's importlib mode puts no test folder on sys.path)."""
    spec = importlib.util.spec_from_file_location("fedbw_test_browser", Path(__file__).with_name("browser.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def chromium_exe(browser_module) -> str:
    """The Chromium binary; skipped only where none is installed (CI installs Debian's and requires it)."""
    exe = browser_module.find_chromium()
    if exe is None:
        if os.environ.get("FEDBW_REQUIRE_BROWSER"):
            pytest.fail("FEDBW_REQUIRE_BROWSER is set but no chromium is installed (.ci/run installs Debian's)")
        pytest.skip("no chromium on this machine: `apt-get install chromium` (Debian's package; .ci/run does)")
    return exe


@pytest.fixture
def make_run():
    """:func:`write_run`, for tests (pytest's importlib mode cannot import this conftest by name)."""
    return write_run
