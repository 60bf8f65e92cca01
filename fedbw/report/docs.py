"""Tables in docs/ generated from the data in the repo, never typed by hand.

A doc marks each generated table::

    <!-- fedbw-table: fidelity.deployment -->
    (generated: do not edit)
    <!-- /fedbw-table -->

and :data:`TABLES` maps each name to a function that renders it from the repository (usually a
benchmark's JSON under benchmarks/results/). ``fedbw docs`` rewrites every marked block;
``fedbw docs --check`` (and a test) fails when a doc no longer matches its data. The study figures of
docs/ (:data:`fedbw.report.study_figures.DOC_FIGURES`) are redrawn from their JSON the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

from fedbw.errors import ConfigError
from fedbw.report.doc_blocks import BLOCK, TABLES
import fedbw.report.doc_tables  # noqa: F401,E402 - importing it registers the renderers


def render_text(text: str, root: Path, source: str = "doc") -> str:
    """``text`` with every marked block regenerated."""
    def replace(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise ConfigError(f"{source}: unknown generated table {name!r}; known: {', '.join(sorted(TABLES))}")
        return m.group(1) + TABLES[name](root) + m.group(4)

    return BLOCK.sub(replace, text)


def docs_with_tables(root: Path) -> list[Path]:
    """Every page under docs/ with a generated block, subfolders (docs/experiments/) included."""
    return sorted(p for p in (root / "docs").rglob("*.md") if BLOCK.search(p.read_text(encoding="utf-8")))


def regenerate(root: Path, check: bool = False) -> list[Path]:
    """Rewrite every doc's generated tables and redraw every study figure of docs/ whose data moved
    (``check``: only report which differ); the docs and figures that differ."""
    from fedbw.report.study_figures import draw_doc_figure, figure_path, stale_figures

    stale = []
    for name in stale_figures(root):
        stale.append(figure_path(root, name))
        if not check:
            draw_doc_figure(root, name)
    for path in docs_with_tables(root):
        text = path.read_text(encoding="utf-8")
        new = render_text(text, root, str(path))
        if new != text:
            stale.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    return stale


def render_stale(root: Path) -> str:
    """The results a model change left stale (:func:`~fedbw.report.doc_blocks.stale_blocks`): one line per
    command that writes them again, with the blocks it feeds; or that none is."""
    from fedbw.netmodel.version import model_version
    from fedbw.report.doc_blocks import stale_blocks

    by_command: dict[str, list[str]] = {}
    made: dict[str, str] = {}
    for name, block, version in stale_blocks(root):
        by_command.setdefault(block.command, []).append(f"{name} ({block.result})")
        made[block.command] = version
    if not by_command:
        return f"every model result is of this fedbw's model ({model_version()})"
    lines = [f"{len(by_command)} command(s) to run again for model {model_version()} (then `fedbw docs`):"]
    lines += [f"- `{cmd}` (made by {made[cmd]}): {', '.join(blocks)}" for cmd, blocks in by_command.items()]
    return "\n".join(lines)
