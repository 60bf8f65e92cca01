"""``fedbw simulate --app``: any Flower app goes through the runner like a config run (summary, plots,
a run directory ``fedbw compare`` and ``fedbw report`` read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedbw.compare import load_run
from fedbw.runner import run_app

QUICKSTART_APP = Path(__file__).resolve().parents[1] / "fixtures" / "quickstart_app"


@pytest.mark.slow
def test_an_app_run_has_a_summary_plots_and_compares_like_any_run(tmp_path: Path) -> None:
    out = tmp_path / "app"
    sim = run_app(QUICKSTART_APP, 2, "home-30", engine="simulate", rounds=2, out_dir=out)
    assert [r.round for r in sim.rounds] == [1, 2]
    assert (out / "summary.json").is_file() and (out / "resolved_config.json").is_file()
    assert list(out.glob("*.png"))
    assert sim.rounds[1].round_interval_s is not None  # a model engine's rounds carry their interval
    run = load_run(out)
    assert run.summary.rounds == 2 and run.summary.engine == "simulate"
    assert run.summary.mean_round_time_s == pytest.approx(sum(r.round_time_s for r in sim.rounds) / 2)


def test_an_app_runs_on_emulate_or_simulate_only(tmp_path: Path) -> None:
    from fedbw.errors import ConfigError

    with pytest.raises(ConfigError, match="emulate or simulate"):
        run_app(QUICKSTART_APP, 2, "home-30", engine="estimate", out_dir=tmp_path)  # type: ignore[arg-type]
