"""docs/config.md's key table is the config models, rendered: every key, its real default, its description."""

from __future__ import annotations

import typing

import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from fedbw.config import ExperimentConfig
from fedbw.report.config_reference import config_reference_markdown, key_docs
from fedbw.report.docs import render_text

ROOT = Path(__file__).resolve().parents[1]
CONFIG_MD = ROOT / "docs" / "config.md"

#: Every key docs/config.md documented by hand before the table was generated (issue 13): none may be lost.
HAND_DOCUMENTED = """name engine device seed output_dir model.name data.dataset data.partition data.dirichlet_alpha
data.samples_per_client data.test_fraction clients.total clients.per_round clients.sampling clients.compute
clients.device_profile training.rounds training.local_epochs training.local_steps training.batch_size
training.learning_rate network.profile network.mix network.overrides privacy.secagg.enabled privacy.secagg.mode
privacy.secagg.num_shares privacy.secagg.reconstruction_threshold privacy.secagg.clipping_range
privacy.secagg.quantization_range privacy.secagg.modulus_range privacy.secagg.max_weight privacy.secagg.timeout_s
privacy.randomness privacy.dp.enabled privacy.dp.mode privacy.dp.noise_multiplier privacy.dp.clipping_norm
privacy.dp.target_delta privacy.dp.max_epsilon privacy.dp.local_epsilon privacy.dp.local_delta
privacy.dp.local_accounting privacy.dp.target_clipped_quantile privacy.dp.clip_norm_lr compression.codec
compression.topk_fraction compression.error_feedback datacenter.fabrics datacenter.ranks
datacenter.grad_bytes_per_value faults.drops faults.flaps faults.stragglers emulate.timeout_s emulate.keep_logs
emulate.dilation emulate.cap_cpu""".split()


def _models(model: type[BaseModel] = ExperimentConfig, prefix: str = "") -> list[tuple[str, type[BaseModel]]]:
    from fedbw.report.config_reference import _item_model, _model_of

    out = [(prefix or "(top level)", model)]
    for name, info in model.model_fields.items():
        sub = _model_of(info.annotation) or _item_model(info.annotation)
        if sub is not None:
            out += _models(sub, f"{prefix}{name}.")
    return out


def test_every_field_of_every_config_model_has_a_description() -> None:
    missing = [f"{where}{name}" for where, model in _models() for name, info in model.model_fields.items()
               if not (info.description or "").strip()]
    assert not missing, f"add Field(description=...) to: {missing}"


def test_every_key_is_in_config_md_with_its_row() -> None:
    text = CONFIG_MD.read_text(encoding="utf-8")
    keys = [k.key for k in key_docs() if not k.section]
    assert len(keys) > 80
    absent = [k for k in keys if f"| `{k}` |" not in text]
    assert not absent, f"run `fedbw docs`: {absent}"
    lost = [k for k in HAND_DOCUMENTED if f"| `{k}` |" not in text]
    assert not lost, lost
    for key in ("framework", "server.link", "deployment.calibration", "deployment.poll_phase"):
        assert f"| `{key}` |" in text  # were missing from the hand-written table


def _value_at(cfg: BaseModel, dotted: str) -> object:
    """The value at a dotted key; inside a table that is unset (``clients.availability``), the value that
    table gets when set: its model's own default."""
    node: object = cfg
    owner: type[BaseModel] = type(cfg)
    for part in dotted.split("."):
        if node is None:  # an optional table left out: its field's default
            info = owner.model_fields[part]
            node = info.get_default(call_default_factory=True)
        else:
            owner = type(node) if isinstance(node, BaseModel) else owner
            field = owner.model_fields.get(part)
            node = getattr(node, part)
            if node is None and field is not None:
                sub = [a for a in typing.get_args(field.annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
                owner = sub[0] if sub else owner
    return node.model_dump() if isinstance(node, BaseModel) else node


def test_defaults_in_the_table_are_what_an_empty_config_resolves_to() -> None:
    cfg = ExperimentConfig()
    checked = 0
    for k in key_docs():
        if k.section or "[]" in k.key:
            continue
        expected = _value_at(cfg, k.key)
        if k.default == "unset":
            assert expected is None, k.key
            continue
        value = tomllib.loads(f"v = {k.default}")["v"]
        if isinstance(expected, list):
            expected = [e.model_dump(exclude_none=True) if isinstance(e, BaseModel) else e for e in expected]
        assert value == expected, k.key
        checked += 1
    assert checked > 50
    row = next(k for k in key_docs() if k.key == "network.mix")
    assert row.default == '[{profile = "home-30", share = 1.0}]'  # filled by the model's validator, not the field


def test_values_come_from_types_and_bounds() -> None:
    rows = {k.key: k for k in key_docs()}
    assert rows["clients.per_round"].values == "integer, ≥ 1"
    assert rows["data.test_fraction"].values == "number, > 0, < 1"
    assert rows["compression.codec"].values == '`"none"` · `"fp16"` · `"int8"` · `"topk"`'
    assert rows["emulate.dilation"].values == 'number or `"auto"`'
    assert rows["training.local_steps"].values == "integer or unset, ≥ 1"
    assert rows["network.mix[].profile"].default == "required"
    assert rows["privacy.secagg"].section


def test_a_changed_description_makes_config_md_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    text = CONFIG_MD.read_text(encoding="utf-8")
    assert render_text(text, ROOT) == text, "run `fedbw docs`"
    info = ExperimentConfig.model_fields["seed"]
    monkeypatch.setattr(info, "description", "a description nobody has rendered yet")
    new = render_text(text, ROOT)
    assert new != text and "| `seed` | `0` | integer, ≥ 0 | a description nobody has rendered yet |" in new
    assert config_reference_markdown() in new


def test_table_cells_escape_pipes() -> None:
    from fedbw.report.config_reference import _cell

    assert _cell("a | b") == "a \\| b"
