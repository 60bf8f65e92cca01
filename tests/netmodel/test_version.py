"""The model's version changes with its code and not with its docstrings or comments."""

from __future__ import annotations

from pathlib import Path

from fedbw.netmodel.version import model_files, model_version, source_version


def _write(path: Path, text: str) -> list[Path]:
    path.write_text(text)
    return [path]


def test_docstrings_and_comments_keep_the_version_code_changes_it(tmp_path: Path) -> None:
    f = tmp_path / "term.py"
    base = source_version(_write(f, '"""A term."""\n\ndef cost(x):\n    """Why."""\n    return 2 * x\n'))
    reworded = source_version(_write(f, '"""A term, reworded."""\n\ndef cost(x):  # a comment\n    """Why not."""\n'
                                        '    return 2 * x\n'))
    changed = source_version(_write(f, '"""A term."""\n\ndef cost(x):\n    """Why."""\n    return 3 * x\n'))
    assert base == reworded and base != changed and base.startswith("m-")


def test_the_model_is_the_netmodel_package_and_flowers_protocol() -> None:
    names = {p.name for p in model_files()}
    assert {"flower.py", "terms.py", "spread.py", "timeline.py", "flower_protocol.py"} <= names
    assert model_version() == source_version(model_files())
