"""A concept is also found by its session neighbours' words (ADR 0035): the keyword leg of
lambo_recall (M-REC-020, M-REC-026) reads a concept's own words and, at half their weight,
the words of the concepts written just before and just after it, as a chat message is found
by its neighbours' (ADR 0016)."""

from __future__ import annotations

from typing import Any

from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from tests.integration.test_memory_writes import (
    AGENT,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)

CHOICE = "we picked Postgres for the ledger service"
REPLY = "yes, because of its transactions"
LATER = "lunch moves to noon on Fridays"


def _contexts(ws: Workspace) -> dict[str, str]:
    rows = ws.reader().execute(
        "SELECT c.content, c.context FROM fts_concepts c JOIN text_docs d ON d.doc_id = c.rowid"
        " ORDER BY d.doc_id"
    )
    return {str(content): str(around) for content, around in rows}


def _bm25_hits(app: App, query: str) -> list[str]:
    result: dict[str, Any] = call(app, "lambo_recall", agent_id=AGENT, query=query, top_k=10)
    hits = result["structuredContent"]["hits"]
    return [h["content"] for h in hits if "bm25" in h.get("ranks", {})]


def test_m_rec_020_a_concept_is_found_by_its_session_neighbours_words(
    app: App, workspace: Workspace
) -> None:
    for text in (CHOICE, REPLY, LATER):
        settled(app, derive(app, concept(text, "observation")))
    assert _contexts(workspace) == {CHOICE: REPLY, REPLY: f"{CHOICE} {LATER}", LATER: REPLY}
    # "ledger" is only in CHOICE; REPLY has it as a neighbour's word, LATER does not.
    assert _bm25_hits(app, "ledger") == [CHOICE, REPLY]


def test_m_rec_026_own_words_outrank_a_neighbours(app: App) -> None:
    """A concept matching by its own words ranks above one matching only by a neighbour's."""
    for text in (REPLY, LATER, "transactions settle nightly", CHOICE):
        settled(app, derive(app, concept(text, "observation")))
    found = _bm25_hits(app, "transactions")
    assert set(found[:2]) == {REPLY, "transactions settle nightly"}
    assert set(found[2:]) == {LATER, CHOICE}  # next to one of them


def test_a_concept_written_in_the_same_write_sits_between_its_write_neighbours(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(CHOICE, "observation")))
    settled(app, derive(app, concept(REPLY, "observation"), concept(LATER, "observation")))
    assert _contexts(workspace) == {CHOICE: REPLY, REPLY: f"{CHOICE} {LATER}", LATER: REPLY}
    assert node_by_content(workspace, LATER).uuid  # both concepts of the write are stored
