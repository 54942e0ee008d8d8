"""The knowledge searches while the embedder is down: an embedder failure on the query (injected
into the real workspace's embedder, as if it were unreachable) leaves the word (BM25) leg and
the graph, and the answer says so in its `warning` object (P-106's shape), its detail logged,
rather than failing the read. Seed 000 is silent here; this follows seed 001's rule for reads
while the embedder is down (M-DER-135), which lambo_recall keeps too."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from tests.conftest import make_call

DOWN = "the embedder at 127.0.0.1:8080 refused the connection"
SAID = (
    "the embedder failed (ConnectionError), so this search read the word (BM25) index and the"
    " graph only, not by meaning; the detail was logged"
)


def test_the_knowledge_searches_answer_by_words_when_the_embedder_fails_and_say_so(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    call = make_call(App(workspace))
    call("knowledge_assert_entity", name="Ada Lovelace", summary="wrote the first program")
    call("knowledge_assert_entity", name="Analytical Engine", summary="a mechanical computer")
    call(
        "knowledge_assert_relationship",
        source_name="Ada Lovelace",
        target_name="Analytical Engine",
        predicate="PROGRAMMED",
        fact="Ada Lovelace programmed the Analytical Engine",
    )
    call("knowledge_add_episode", name="note", episode_body="the launch slipped a week")
    searches: dict[str, dict[str, Any]] = {
        "knowledge_find_entities": {"query": "Ada Lovelace"},
        "knowledge_find_relationships": {"query": "programmed Analytical Engine"},
        "knowledge_search_passages": {"query": "launch slipped", "min_score": 0.0},
    }
    before = {name: call(name, **params) for name, params in searches.items()}
    assert all("warning" not in found and found["count"] for found in before.values())

    model = workspace.embedder.inner

    def unreachable(texts: Sequence[str]) -> Any:
        raise ConnectionError(DOWN)

    monkeypatch.setattr(model, "embed", unreachable)
    workspace.forget_query_embeddings()
    with caplog.at_level(logging.ERROR):
        during = {name: call(name, **params) for name, params in searches.items()}
    for name, found in during.items():
        assert found["warning"] == {"type": "embedder_failed", "message": SAID}, name
        rows = found.get("nodes") or found.get("edges") or found.get("passages")
        assert rows, f"{name} found nothing by its words"
        assert all("vector" not in leg for row in rows for leg in row["ranks"]), name
        assert DOWN not in str(found)
    assert DOWN in caplog.text  # the detail is in the log, not in the answer
