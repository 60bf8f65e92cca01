"""docs/config.md's key table, rendered from the pydantic models themselves.

Each row comes from one field: its dotted key, the default an empty config resolves to (read from
``ExperimentConfig()``, so validators that fill defaults — ``network.mix`` — show what a run gets), the
values the field accepts (its type, ``Literal`` choices and bounds) and its ``Field(description=…)``.
A field added without a description fails tests/test_config_docs.py; a changed model makes the
generated block in docs/config.md stale, which tests/test_docs.py catches.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from fedbw.report.doc_blocks import md_table


@dataclass(frozen=True)
class KeyDoc:
    key: str  #: dotted, ``[]`` marks the items of a list of tables (``network.mix[].profile``)
    default: str
    values: str
    meaning: str
    section: bool = False  #: a table of keys rather than a key


def _toml(value: Any) -> str:
    """A default as it would be written in the TOML file; ``unset`` for None (TOML has no null)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, BaseModel):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.model_dump().items() if v is not None) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items() if v is not None) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _optional_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a ``Model | None`` field (a table that may be left out), else None."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return _model_of(args[0])
    return None


def _item_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a ``list[Model]`` field (a list of TOML tables), else None."""
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation) or (None,)
        return _model_of(item)
    return None


def _bounds(info: FieldInfo | Any) -> str:
    """The bounds a field (or an ``Annotated`` member of a union) puts on its value: "≥ 3", "> 0", …"""
    signs = {at.Ge: ("≥", "ge"), at.Gt: (">", "gt"), at.Le: ("≤", "le"), at.Lt: ("<", "lt")}
    parts = []
    for m in _flat_metadata(getattr(info, "metadata", ())):
        for kind, (sign, attr) in signs.items():
            if isinstance(m, kind):
                parts.append(f"{sign} {getattr(m, attr)}")
    return ", ".join(parts)


def _flat_metadata(metadata: Any) -> list[Any]:
    """Annotated metadata, a ``Field(...)``'s own constraints unpacked (``Annotated[int, Field(ge=3)]``)."""
    out: list[Any] = []
    for m in metadata:
        out += list(m.metadata) if isinstance(m, FieldInfo) else [m]
    return out


def _kind(annotation: Any) -> str:
    """What a person may write: ``true``/``false``, an integer, one of the listed words, …"""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(annotation)
        bounds = _bounds(type("Meta", (), {"metadata": meta})())
        return _kind(base) + (f" {bounds}" if bounds else "")
    if origin is Literal:
        return " · ".join(f"`{_toml(v)}`" for v in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        kinds = " or ".join(_kind(a) for a in args)
        return kinds + (" or unset" if len(args) < len(typing.get_args(annotation)) else "")
    if origin is list:
        (item,) = typing.get_args(annotation)
        return "list of tables" if _model_of(item) else f"list of {_kind(item)}s"
    return {bool: "true/false", int: "integer", float: "number", str: "string"}.get(annotation, str(annotation))


def _values(info: FieldInfo) -> str:
    bounds = _bounds(info)
    return _kind(info.annotation) + (f", {bounds}" if bounds else "")


def _default(info: FieldInfo, instance: BaseModel | None, name: str) -> str:
    if instance is not None:
        return _toml(getattr(instance, name))
    if info.default is PydanticUndefined and info.default_factory is None:
        return "required"
    return _toml(info.get_default(call_default_factory=True))


def key_docs(model: type[BaseModel] | None = None, instance: BaseModel | None = None,
             prefix: str = "") -> list[KeyDoc]:
    """Every key of ``model`` (default: the whole experiment config), depth first, in field order."""
    if model is None:
        from fedbw.config import ExperimentConfig

        model, instance = ExperimentConfig, ExperimentConfig()
    rows = []
    for name, info in model.model_fields.items():
        key = f"{prefix}{name}"
        meaning = info.description or ""
        sub = _model_of(info.annotation)
        if sub is not None:
            rows.append(KeyDoc(key, "", "table", meaning, section=True))
            rows += key_docs(sub, None if instance is None else getattr(instance, name), f"{key}.")
            continue
        optional = _optional_model(info.annotation)
        if optional is not None:  # a table that may be left out: its keys with the defaults it gets when set
            rows.append(KeyDoc(key, "unset", "table or unset", meaning, section=True))
            rows += key_docs(optional, None, f"{key}.")
            continue
        rows.append(KeyDoc(key, _default(info, instance, name), _values(info), meaning))
        item = _item_model(info.annotation)
        if item is not None:
            rows += key_docs(item, None, f"{key}[].")
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def config_reference_markdown() -> str:
    """The table of every config key; sections are bold rows, list items are ``key[].field``."""
    rows = []
    for k in key_docs():
        if k.section:
            rows.append([f"**`[{k.key}]`**", "", "", f"**{_cell(k.meaning)}**"])
        else:
            rows.append([f"`{k.key}`", f"`{_cell(k.default)}`" if k.default not in ("unset", "required")
                         else k.default, _cell(k.values), _cell(k.meaning)])
    return md_table(["key", "default", "values", "meaning"], rows, right=set())
