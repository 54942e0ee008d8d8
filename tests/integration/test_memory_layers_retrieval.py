"""A merged recall's one retrieval over all the call's sessions (ADR 0097): each session's
candidates are those its own recall reads, the keyword owners and the catalog rows of every
session are read in one query each, and the query is embedded once. A real workspace opened
by `Service.start`, session `lambo` layered over `general`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces.config import Settings
from lcg.interfaces.service import Service
from lcg.interfaces.settings_file import Tuning
from lcg.projections.text import reader
from lcg.projections.vectors import catalog
from lcg.queries import recall
from lcg.queries.reads import search_context

AGENT = "gpt-6.1-sol"
QUIET = Tuning().with_values(
    daemon__tick_interval_secs=3600, daemon__canonization_eval_interval_secs=86_400
)
FACTS = {
    "general": [
        "worktree branches are always rebased onto origin main first",
        "release tags are signed with the team key",
        "the changelog lists every user-visible change",
    ],
    "lambo": [
        "release notes are drafted before the tag",
        "the lambo worktree keeps its branches short",
        "a failing release build blocks the tag",
    ],
}
QUERIES = [
    "release notes worktree branches",
    "who signs the release tag",
    "changelog",
    "nothing here matches at all",
]


@pytest.fixture
def layered(tmp_path: Path) -> Iterator[Service]:
    settings = Settings(workspace=tmp_path, session="lambo", layers=("general",), tuning=QUIET)
    served = Service(settings, command="pytest")
    assert served.start() == "healthy", served.reason
    try:
        for session, facts in FACTS.items():
            for fact in facts:
                concept = {"content": fact, "concept_type": "logic"}
                ack = call(served, "lambo_derive", concepts=[concept], scope=session)
                receipt = ack["structuredContent"]["receipt"]
                settled = call(served, "lambo_stats", receipt=receipt, wait_ms=20_000)
                assert settled["structuredContent"]["receipt"]["state"] == "applied"
        yield served
    finally:
        served.close()


def call(service: Service, name: str, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = service.call(name, {"agent_id": AGENT, **params}, session=None)
    return result


def test_m_rec_240_one_retrieval_gives_each_session_the_candidates_of_its_own_recall(
    layered: Service,
) -> None:
    app = layered.app
    assert app is not None
    ctx = search_context(app.reads)
    for query in QUERIES:
        both = recall.candidates(ctx, ["lambo", "general"], query, 10)
        for session in ("lambo", "general"):
            alone = recall.candidates(ctx, [session], query, 10)[session]
            assert both[session] == alone, (query, session)
    found = recall.candidates(ctx, ["lambo", "general"], QUERIES[0], 10)
    assert {hit.group_id for hit in found["general"].text_hits} == {"general"}
    assert found["lambo"].text_hits
    assert found["general"].vectors


def test_m_rec_240_a_merged_recall_reads_owners_and_catalog_once_for_all_sessions(
    layered: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One query for the keyword hits' owners and one for the vector hits' catalog rows,
    whatever the number of sessions read; the query embedded once."""
    app = layered.app
    assert app is not None
    workspace = app.workspace
    reads: dict[str, int] = {"owners": 0, "catalog": 0}
    owners, rows = reader.hits, catalog.describe

    def counted_owners(*args: Any) -> Any:
        reads["owners"] += 1
        return owners(*args)

    def counted_rows(*args: Any) -> Any:
        reads["catalog"] += 1
        return rows(*args)

    monkeypatch.setattr(reader, "hits", counted_owners)
    monkeypatch.setattr(catalog, "describe", counted_rows)
    embedded: list[str] = []
    embed = workspace.embedder.embed_queries

    def counting(texts: list[str]) -> Any:
        embedded.extend(texts)
        return embed(texts)

    monkeypatch.setattr(workspace.embedder, "embed_queries", counting)
    workspace.forget_query_embeddings()
    answer = call(layered, "lambo_recall", query=QUERIES[0])
    assert {hit["session"] for hit in answer["structuredContent"]["hits"]} == {"lambo", "general"}
    assert reads == {"owners": 1, "catalog": 1}
    assert embedded == [QUERIES[0]]
