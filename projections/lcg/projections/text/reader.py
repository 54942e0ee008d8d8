"""BM25 reads of the text projection: ranked owners per document kind."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that match nearly every English document: as OR terms they only add noise to bm25.
STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    }
)
# entity: name 2, summary 1; edge: name 1, fact 2; passage: own words 2, neighbours' 1.
_COLUMN_WEIGHTS = {"entity": "2.0, 1.0", "edge": "1.0, 2.0", "passage": "2.0, 1.0"}
_TABLES = {"entity": "fts_entities", "edge": "fts_edges", "passage": "fts_passages"}


@dataclass(frozen=True, slots=True)
class TextHit:
    """A document matched by BM25: its owner, part, group, and a score where higher is better."""

    owner_uuid: str
    part: int
    group_id: str
    score: float


def match_expression(query: str) -> str | None:
    """The query's words, each quoted, joined by OR; None when it has no words.

    Quoting keeps FTS5 syntax characters in user text from being read as operators.
    """
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(query)))
    content = [word for word in words if word not in STOP_WORDS]
    words = content or words  # a query of stop words alone still searches for them
    if not words:
        return None
    return " OR ".join(f'"{word}"' for word in words)


def search(
    conn: sqlite3.Connection, kind: str, query: str, groups: Sequence[str] | None, limit: int
) -> list[TextHit]:
    """Top `limit` documents of `kind` (entity, edge, passage) by bm25, best first."""
    expression = match_expression(query)
    if expression is None or (groups is not None and not groups):
        return []
    table = _TABLES[kind]
    where, params = "", []
    if groups is not None:
        where = f" AND d.group_id IN ({','.join('?' * len(groups))})"
        params = list(groups)
    rows = conn.execute(
        f"SELECT d.owner_uuid, d.part, d.group_id, bm25({table}, {_COLUMN_WEIGHTS[kind]}) AS rank"
        f" FROM {table} JOIN text_docs d ON d.doc_id = {table}.rowid"
        f" WHERE {table} MATCH ?{where} ORDER BY rank LIMIT ?",
        [expression, *params, limit],
    ).fetchall()
    return [TextHit(row[0], int(row[1]), row[2], -float(row[3])) for row in rows]


def passage_text(conn: sqlite3.Connection, owner_uuid: str, part: int) -> str | None:
    row = conn.execute(
        "SELECT p.content FROM text_docs d JOIN fts_passages p ON p.rowid = d.doc_id"
        " WHERE d.owner_uuid=? AND d.kind='passage' AND d.part=?",
        (owner_uuid, part),
    ).fetchone()
    return None if row is None else str(row[0])
