"""Hostile input, generated (hypothesis): config files, ``--set`` items and command-line arguments.

Whatever a person types, fedbw answers with a result or with one line that names the key (or the
option) and exit code 2 — never a traceback, never another exit code. The keys come from the config
schema itself, so a key added later is fuzzed too.
"""

from __future__ import annotations

import string
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from typer.testing import CliRunner

from fedbw.config import ExperimentConfig, config_from_dict, load_config
from fedbw.config.loading import read_toml
from fedbw.errors import FedbwError

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "experiments" / "quickstart.toml"
SETTINGS = settings(max_examples=250, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _leaves(model: type[BaseModel], prefix: str = "") -> list[tuple[str, bool]]:
    """Every key of the schema as (dotted key, inside a list of tables)."""
    out: list[tuple[str, bool]] = []
    for name, f in model.model_fields.items():
        key = f"{prefix}{f.alias or name}"
        ann = f.annotation
        sub = next((t for t in (ann, *typing.get_args(ann)) if isinstance(t, type) and issubclass(t, BaseModel)),
                   None)
        in_list = typing.get_origin(ann) is list or any(typing.get_origin(a) is list for a in typing.get_args(ann))
        if sub is not None:
            out += [(k, nested or in_list) for k, nested in _leaves(sub, key + ".")]
        else:
            out.append((key, False))
    return out


LEAVES = _leaves(ExperimentConfig)
SCALAR_KEYS = sorted(k for k, in_list in LEAVES if not in_list)
TABLE_LIST_KEYS = sorted({k.rsplit(".", 1)[0] for k, in_list in LEAVES if in_list})

# TOML values as a person might type them after `key=`: well-formed of every type, and not TOML at all.
_floats = st.floats(allow_nan=True, allow_infinity=True)
_scalars = st.one_of(st.integers(min_value=-2**70, max_value=2**70).map(str), _floats.map(repr),
                     st.booleans().map(lambda b: "true" if b else "false"),
                     st.text(max_size=12).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
                     st.sampled_from(["auto", "home-30", "resnet50", "inf", "-inf", "nan", "0", "-0", "1e999"]))
_raw = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
    st.dictionaries(st.sampled_from(["client", "profile", "share", "round", "stage", "x"]), inner, max_size=3)
    .map(lambda d: "{" + ", ".join(f"{k} = {v}" for k, v in d.items()) + "}")), max_leaves=6)
VALUES = st.one_of(_raw, st.text(max_size=20))


def _refusal(exc: FedbwError, *names: str) -> str:
    text = str(exc)
    assert exc.exit_code == 2, f"exit code {exc.exit_code} for {text!r}"
    assert any(n in text for n in names), f"the error names none of {names}: {text!r}"
    return text


def _named(key: str) -> tuple[str, ...]:
    """How an error may name ``key``: itself, or the section a bad section value is reported on."""
    parts = key.split(".")
    return (key, *(".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1) if i > 1 or len(parts) == 2))


def _fuzz_set(keys: list[str], names: Any) -> dict[str, int]:
    """``--set KEY=VALUE`` for generated keys of ``keys`` and values; a refusal must name ``names(key, raw)``."""
    counts = {"items": 0, "refused": 0}

    @SETTINGS
    @given(key=st.sampled_from(keys), raw=VALUES)
    def check(key: str, raw: str) -> None:
        counts["items"] += 1
        try:
            load_config(QUICKSTART, [f"{key}={raw}"])
        except FedbwError as exc:
            counts["refused"] += 1
            _refusal(exc, *names(key, raw))

    check()
    return counts


def test_every_config_key_with_any_value(reliability) -> None:
    counts = _fuzz_set(SCALAR_KEYS, lambda key, raw: (*_named(key), f"{key}={raw}"[:40]))
    reliability.area = "hostile input"
    reliability.tried = f"`--set KEY=VALUE` with every config key ({len(SCALAR_KEYS)}) and generated values"
    reliability.kept = "accepted, or refused with exit 2 naming the key; no traceback"
    reliability.measure(items=counts["items"], refused=counts["refused"])
    assert counts["refused"] > 0 and counts["refused"] < counts["items"]


def test_lists_of_tables_with_any_entries(reliability) -> None:
    counts = _fuzz_set(TABLE_LIST_KEYS, lambda key, raw: (key,))
    reliability.area = "hostile input"
    reliability.tried = f"`--set` of the lists of tables ({', '.join(TABLE_LIST_KEYS)}) with generated entries"
    reliability.kept = "accepted, or refused with exit 2 naming the list (and the entry's index and field)"
    reliability.measure(items=counts["items"], refused=counts["refused"])
    assert counts["refused"] > 0.5 * counts["items"]  # most generated entries are wrong: a checker that let all pass fails


_key_text = st.text(alphabet=string.ascii_letters + string.digits + "._-= \t[]\"'#é", min_size=0, max_size=24)


def test_malformed_and_unknown_keys(reliability) -> None:
    counts = {"items": 0, "refused": 0}

    @SETTINGS
    @given(item=st.one_of(_key_text, st.builds(lambda k, v: f"{k}={v}", _key_text, VALUES)))
    def check(item: str) -> None:
        counts["items"] += 1
        try:
            load_config(QUICKSTART, [item])
        except FedbwError as exc:
            counts["refused"] += 1
            key = item.split("=", 1)[0].strip()
            first_unknown = next((p for p in key.split(".") if p), "")
            _refusal(exc, "--set", key or "key", first_unknown or "key")

    check()
    reliability.area = "hostile input"
    reliability.tried = "`--set` items with generated keys: empty, unknown, punctuation, no `=`"
    reliability.kept = "refused with exit 2 naming the item or the unknown key (or accepted when it is valid)"
    reliability.measure(items=counts["items"], refused=counts["refused"])
    assert counts["refused"] == counts["items"] or counts["refused"] > 0.9 * counts["items"]


def test_config_files_of_any_bytes(tmp_path: Path, reliability) -> None:
    counts = {"files": 0, "refused": 0}
    path = tmp_path / "x.toml"

    @SETTINGS
    @given(data=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                          st.builds(lambda head, body: (head + body).encode(),
                                    st.sampled_from(["[clients]\n", "[[faults.drops]]\n", "name = ", "[network]\n"]),
                                    st.text(max_size=80))))
    def check(data: bytes) -> None:
        counts["files"] += 1
        path.write_bytes(data)
        try:
            load_config(path)
        except FedbwError as exc:
            counts["refused"] += 1
            _refusal(exc, str(path))

    check()
    reliability.area = "hostile input"
    reliability.tried = "config files of generated bytes: binary, broken UTF-8, broken TOML, sections with junk"
    reliability.kept = "refused with exit 2 naming the file (and the line for TOML errors); no traceback"
    reliability.measure(files=counts["files"], refused=counts["refused"])
    assert counts["refused"] > 0.5 * counts["files"]  # generated bytes are rarely a valid config


_toml_scalar = st.one_of(st.integers(min_value=-10**6, max_value=10**6), st.floats(allow_nan=True),
                         st.booleans(), st.text(max_size=8), st.lists(st.integers(0, 5), max_size=3))


def test_well_formed_configs_with_wrong_values(reliability) -> None:
    """Whole configs: the quickstart with a section replaced by generated keys and values."""
    counts = {"configs": 0, "refused": 0}
    base = read_toml(QUICKSTART, "config", "")
    sections = sorted({k.split(".")[0] for k in SCALAR_KEYS if "." in k})

    @SETTINGS
    @given(section=st.sampled_from(sections),
           body=st.dictionaries(st.sampled_from(sorted({k.split(".")[1] for k in SCALAR_KEYS if "." in k}) + ["zz"]),
                                _toml_scalar, max_size=4))
    def check(section: str, body: dict[str, Any]) -> None:
        counts["configs"] += 1
        data = {**base, section: body}
        try:
            config_from_dict(data, source="generated.toml")
        except FedbwError as exc:
            counts["refused"] += 1
            _refusal(exc, *(f"{section}.{k}" for k in body), section, "generated.toml")

    check()
    reliability.area = "hostile input"
    reliability.tried = "whole configs with one section replaced by generated keys and values"
    reliability.kept = "accepted, or refused with exit 2 naming section.key; no traceback"
    reliability.measure(configs=counts["configs"], refused=counts["refused"])
    assert counts["refused"] > 0.5 * counts["configs"]  # generated sections are mostly wrong: all passing is a bug


# ------------------------------------------------------------------------------------------ the CLI
runner = CliRunner()
#: Commands that answer at once (no Flower, no traffic), their options and the names an error may use.
CLI_OPTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "estimate": {"--model": ("--model", "model"), "--profile": ("--profile", "profile", "network"),
                 "--fabric": ("--fabric", "fabric"), "--ranks": ("--ranks", "ranks"),
                 "--clients": ("--clients", "clients"), "--secagg": ("--secagg", "secagg"),
                 "--codec": ("--codec", "codec"), "--set": ("--set", "=")},
    "allreduce": {"--model": ("--model", "model"), "--fabric": ("--fabric", "fabric"),
                  "--ranks": ("--ranks", "ranks"), "--node-fabric": ("--node-fabric", "fabric"),
                  "--sizes": ("--sizes", "size")},
    "validate": {"--set": ("--set", "=")},
    "sweep": {"--param": ("--param", "param", "--range", "--values"), "--range": ("--range", "range")},
}
_cli_value = st.one_of(st.text(alphabet=string.printable, max_size=12), st.integers(-5, 10**6).map(str),
                       st.sampled_from(["resnet50", "home-30", "ib-ndr400", "2:64", "1K:64M", "up_mbps", "10:100:10",
                                        "packed", "topk", "clients.total=3", "0", "-1", "nan", ":", "1:0:-1"]))


@pytest.mark.slow
def test_command_line_arguments(reliability) -> None:
    counts = {"invocations": 0, "refused": 0}

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(command=st.sampled_from(sorted(CLI_OPTIONS)), data=st.data())
    def check(command: str, data: st.DataObject) -> None:
        opts = CLI_OPTIONS[command]
        chosen = data.draw(st.lists(st.sampled_from(sorted(opts)), min_size=1, max_size=3, unique=True))
        args = [command] + ([str(QUICKSTART)] if command in ("validate", "sweep") else [])
        names = {n for opt in chosen for n in opts[opt]}
        for opt in chosen:
            value = data.draw(_cli_value)
            args += [opt, value]
            if opt == "--set" and "=" in value:
                # `--set KEY=VALUE` may be refused by a check across keys ("clients.per_round (5) cannot
                # exceed clients.total (3)"): naming the key the person set is naming the problem.
                names.add(value.split("=", 1)[0].strip())
        if command == "sweep" and "--param" not in chosen:
            args += ["--param", "up_mbps"]
        counts["invocations"] += 1
        res = runner.invoke(_app(), args)
        assert res.exception is None or isinstance(res.exception, SystemExit), (args, res.exception)
        assert "Traceback" not in res.output, (args, res.output)
        assert res.exit_code in (0, 2), (args, res.exit_code, res.output)
        if res.exit_code == 2:
            counts["refused"] += 1
            flat = "".join(res.output.split())  # Rich wraps long messages at the console's width
            assert any("".join(n.split()) in flat for n in names if n), (args, res.output)

    check()
    reliability.area = "hostile input"
    reliability.tried = f"generated arguments to {', '.join(sorted(CLI_OPTIONS))} (in-process, every option)"
    reliability.kept = "exit 0, or exit 2 with the option or its config key named; never a traceback"
    reliability.measure(invocations=counts["invocations"], refused=counts["refused"])


def _app() -> Any:
    from fedbw.cli import app

    return app


@pytest.mark.parametrize("args", [["report", "{tmp}/nope"], ["compare", "{tmp}/nope", "{tmp}/nope2"],
                                  ["report", "{tmp}/garbage"], ["compare", "{tmp}/garbage", "{tmp}/garbage"]])
def test_report_and_compare_of_missing_or_garbage_runs(tmp_path: Path, args: list[str], reliability) -> None:
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "records.jsonl").write_bytes(b"\x00\xff not json\n{\"kind\": \"round\"}\n")
    res = runner.invoke(_app(), [a.format(tmp=tmp_path) for a in args])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert "records" in res.output
    reliability.area = "hostile input"
    reliability.tried = f"`fedbw {args[0]}` of a run directory that is {'missing' if 'nope' in args[1] else 'garbage'}"
    reliability.kept = "exit 2 naming the records file (and the damaged line); no empty table, no exit 0"
