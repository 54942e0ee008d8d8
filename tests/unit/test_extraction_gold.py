"""The hand-labelled extraction set validates, and its loader refuses a broken label (ADR 0043)."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.fixtures import corpus, extraction_gold
from lcg.fixtures.corpus import CorpusError


def test_issue_14_the_shipped_extraction_set_is_labelled_consistently() -> None:
    gold = extraction_gold.extraction_gold()
    assert len(gold) == 24
    assert sum(len(c.entities) for c in gold) == 74
    assert sum(len(c.facts) for c in gold) == 45
    assert any(not c.entities for c in gold), "one chunk names nothing: precision is tested"


def _one(chunk: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus, "read_data", lambda name: {"chunks": [chunk]})
    extraction_gold.extraction_gold()


ALICE = {"name": "Alice", "type": "Person"}


@pytest.mark.parametrize(
    ("chunk", "said"),
    [
        (
            {"id": "x", "text": "Alice met Bob.", "entities": [ALICE],
             "facts": [{"source": "Alice", "predicate": "MET", "target": "Bob"}]},
            "chunks[0].facts[0]: source and target must be entities of the chunk",
        ),
        (
            {"id": "x", "text": "Someone met Bob.", "entities": [ALICE], "facts": []},
            "chunks[0].entities: 'Alice' must appear in the text",
        ),
        (
            {"id": "x", "text": "Alice.", "entities": [{"name": "Alice"}], "facts": []},
            "chunks[0].entities[0].type: must be a non-empty string",
        ),
    ],
)  # fmt: skip
def test_issue_14_a_broken_label_is_refused_naming_where(
    chunk: dict[str, Any], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(CorpusError, match=said.replace("[", r"\[").replace("]", r"\]")):
        _one(chunk, monkeypatch)
