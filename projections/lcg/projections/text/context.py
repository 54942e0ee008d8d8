"""Contextual indexing of chat messages: a message is also found by its neighbours' words.

Short replies ("yes, last week!") carry no words of their own; the turns next to them do.
Measured on REALTALK with rank-bm25 (ENGINEERING-NOTES.md): indexing each turn with the text
of one turn on each side lifted R@10 from 0.431 to 0.480. Episodes whose source is `message`
get a second FTS column, `context`, holding the previous and next message of the same group;
it is weighted below the message's own words. Everything is read from the text projection's
own tables, so the projection stays self-contained and replays to the same state.
"""

from __future__ import annotations

import sqlite3

from lcg.projections.text.tables import put

CHAT_SOURCES = frozenset({"message"})
MAX_NEIGHBOUR = 1_000  # characters of each neighbour that go into a message's context


def neighbours(conn: sqlite3.Connection, group_id: str, seq: int) -> list[str]:
    """The message episodes just before and just after `seq` in the group (0-2 uuids)."""
    found = []
    for comparison, order in (("<", "DESC"), (">", "ASC")):
        row = conn.execute(
            "SELECT owner_uuid FROM text_docs WHERE group_id=? AND kind='passage' AND chat=1"
            f" AND seq {comparison} ? ORDER BY seq {order} LIMIT 1",
            (group_id, seq),
        ).fetchone()
        if row is not None:
            found.append(str(row[0]))
    return found


def body(conn: sqlite3.Connection, episode_uuid: str) -> str:
    """An episode's indexed text (its passages in order), cut to MAX_NEIGHBOUR characters."""
    parts = [
        str(row[0])
        for row in conn.execute(
            "SELECT p.content FROM text_docs d JOIN fts_passages p ON p.rowid = d.doc_id"
            " WHERE d.owner_uuid=? AND d.kind='passage' ORDER BY d.part",
            (episode_uuid,),
        )
    ]
    return " ".join(parts)[:MAX_NEIGHBOUR]


def context_for(conn: sqlite3.Connection, group_id: str, seq: int) -> str:
    return " ".join(body(conn, uuid) for uuid in neighbours(conn, group_id, seq))


def refresh(conn: sqlite3.Connection, episode_uuid: str) -> None:
    """Recompute the context column of a message episode's passages."""
    rows = conn.execute(
        "SELECT d.doc_id, d.group_id, d.seq, p.content FROM text_docs d JOIN fts_passages p"
        " ON p.rowid = d.doc_id WHERE d.owner_uuid=? AND d.kind='passage' AND d.chat=1",
        (episode_uuid,),
    ).fetchall()
    if not rows:
        return
    text = context_for(conn, rows[0][1], rows[0][2])
    for doc_id, _, _, content in rows:
        put(conn, "passage", doc_id, (content, text), replace=True)


# Agent memory (ADR 0035): a concept is also found by the words of the concepts written just
# before and just after it in its session, the way a chat message is by its neighbours'. The
# order is the session's stream order: a concept's text_docs row is created when its write is
# applied, so doc ids grow with seq within a group (a replay creates them in the same order).


def concept_neighbour(
    conn: sqlite3.Connection, group_id: str, doc_id: int, *, after: bool
) -> tuple[int, str] | None:
    """The session's concept document just before (or after) `doc_id`, with its content."""
    comparison, order = (">", "ASC") if after else ("<", "DESC")
    row = conn.execute(
        "SELECT d.doc_id, c.content FROM text_docs d JOIN fts_concepts c ON c.rowid = d.doc_id"
        f" WHERE d.group_id=? AND d.kind='concept' AND d.doc_id {comparison} ?"
        f" ORDER BY d.doc_id {order} LIMIT 1",
        (group_id, doc_id),
    ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def concept_context(before: str | None, after: str | None) -> str:
    """The context column of a concept between two neighbours' contents (either missing)."""
    return " ".join(text[:MAX_NEIGHBOUR] for text in (before, after) if text)


def refresh_concept(conn: sqlite3.Connection, group_id: str, doc_id: int) -> None:
    """Recompute a concept document's context from its current neighbours."""
    (content,) = conn.execute(
        "SELECT content FROM fts_concepts WHERE rowid=?", (doc_id,)
    ).fetchone()
    before = concept_neighbour(conn, group_id, doc_id, after=False)
    after = concept_neighbour(conn, group_id, doc_id, after=True)
    around = concept_context(
        None if before is None else before[1], None if after is None else after[1]
    )
    put(conn, "concept", doc_id, (str(content), around), replace=True)
