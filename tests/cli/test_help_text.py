"""Every command's --help shows its bracketed text: Rich reads "[tool.flwr.app]" as markup and drops it
unless escaped, so a help line can silently lose what it says."""

from __future__ import annotations

import re

import click
import pytest
import typer.main
from typer.testing import CliRunner

from fedbw.cli import app

BRACKETED = re.compile(r"\[([^\[\]]+)\]")


def _commands() -> dict[str, click.Command]:
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    return dict(group.commands)


def _squash(text: str) -> str:
    return re.sub(r"[\s│╭╮╰╯─]+", "", text)


@pytest.mark.parametrize("name", sorted(_commands()))
def test_help_keeps_every_bracketed_phrase(name: str) -> None:
    cmd = _commands()[name]
    texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
    wanted = [m.group(1) for t in texts for m in BRACKETED.finditer(t.replace("\\[", "["))]
    res = CliRunner().invoke(app, [name, "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    shown = _squash(res.output)
    lost = [w for w in wanted if _squash(f"[{w}]") not in shown]
    assert not lost, f"fedbw {name} --help lost {lost}"


def test_the_check_sees_a_lost_phrase() -> None:
    assert _squash("[tool.flwr.app]") not in _squash("(pyproject with )")
    assert "emulate" in _commands()


def test_commands_are_listed_in_the_order_a_user_needs_them() -> None:
    from fedbw.cli.common import COMMAND_ORDER

    assert set(COMMAND_ORDER) == set(_commands()), "place every command in COMMAND_ORDER"
    res = CliRunner().invoke(app, ["--help"], terminal_width=200)
    listed = [line.split()[1] for line in res.output.splitlines()
              if line.startswith("│ ") and len(line.split()) > 1 and line.split()[1] in COMMAND_ORDER]
    assert listed[:6] == ["run", "estimate", "sweep", "study", "report", "compare"]
    assert listed == list(COMMAND_ORDER)
