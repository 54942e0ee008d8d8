"""LCG_EMBEDDER (ADR 0061): what a process embeds with, read at start-up like every setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.config import Settings
from lcg.projections.embedding.choice import chosen_embedder
from lcg.projections.embedding.hashing import HashingEmbedder


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
    assert "must be 'minilm' or 'hashing'" in str(error.value)
    assert repr(value.strip().lower()) in str(error.value)


def test_adr_0061_hashing_gives_the_hashing_embedder_and_loads_no_model() -> None:
    """The unit group's guard fails any construction of MiniLM: this one makes none."""
    assert chosen_embedder("hashing").contract == HashingEmbedder().contract
