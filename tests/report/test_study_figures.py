"""The study figures of docs/ are drawn from their committed JSON alone, stamped with its SHA-256, and
``fedbw docs`` redraws (``--check`` reports) a figure whose data moved."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from PIL import Image

from fedbw.report.doc_blocks import RESULTS
from fedbw.report.docs import regenerate
from fedbw.report.study_figures import (DOC_FIGURES, SHA_KEY, StudyView, draw_doc_figure, has_accuracy_curve,
                                        stale_figures)

ROOT = Path(__file__).resolve().parents[2]


def _repo(tmp_path: Path, name: str) -> Path:
    src = ROOT / RESULTS / DOC_FIGURES[name][0]
    (tmp_path / RESULTS).mkdir(parents=True)
    (tmp_path / "docs" / "img").mkdir(parents=True)
    shutil.copyfile(src, tmp_path / RESULTS / src.name)
    return tmp_path


def test_every_committed_doc_figure_matches_its_committed_json() -> None:
    assert stale_figures(ROOT) == [], "run `fedbw docs` and commit the figures"


def test_a_figure_is_redrawn_when_its_data_moves(tmp_path: Path) -> None:
    root = _repo(tmp_path, "privacy-at-scale")
    assert "privacy-at-scale" in stale_figures(root)  # no figure yet
    png = draw_doc_figure(root, "privacy-at-scale")
    assert Image.open(png).text[SHA_KEY] and "privacy-at-scale" not in stale_figures(root)
    data = json.loads((root / RESULTS / "privacy-at-scale.json").read_text())
    data["rows"][0]["round_ratio"] = 1.5
    (root / RESULTS / "privacy-at-scale.json").write_text(json.dumps(data))
    assert "privacy-at-scale" in stale_figures(root)
    assert png in regenerate(root, check=True) and "privacy-at-scale" in stale_figures(root)  # check draws nothing
    regenerate(root)
    assert "privacy-at-scale" not in stale_figures(root)


def test_the_accuracy_figure_needs_trained_rows_and_a_numeric_axis() -> None:
    data = json.loads((ROOT / RESULTS / "privacy-at-scale.json").read_text())
    view = StudyView.from_json(data)
    assert view.grid and not has_accuracy_curve(view)  # the estimate engine trains nothing
    for r in view.rows:
        r.accuracy, r.epsilon = 0.5, 1.0
    assert has_accuracy_curve(view)
