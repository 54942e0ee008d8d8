"""BM25 reads of the text projection: ranked owners per document kind."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from lcg.projections.text.scorer import TextScorer, coverage_weight
from lcg.projections.text.tables import FTS_TABLES, TEXT_TABLES

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
_COLUMN_WEIGHTS = {t.kind: ", ".join(str(w) for w in t.weights) for t in TEXT_TABLES}


@dataclass(frozen=True, slots=True)
class TextHit:
    """A document matched by BM25: its owner, part, group, a score where higher is better, and
    its row in the kind's FTS5 table."""

    owner_uuid: str
    part: int
    group_id: str
    score: float
    doc_id: int


def query_words(query: str) -> list[str]:
    """The query's distinct lowercased words without stop words (all of them if only those)."""
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(query)))
    content = [word for word in words if word not in STOP_WORDS]
    return content or words  # a query of stop words alone still searches for them


def match_expression(query: str) -> str | None:
    """The query's words, each quoted, joined by OR; None when it has no words.

    Quoting keeps FTS5 syntax characters in user text from being read as operators.
    """
    words = query_words(query)
    return " OR ".join(f'"{word}"' for word in words) if words else None


def scored_docs(
    scorer: TextScorer, kind: str, query: str, groups: Sequence[str] | None, limit: int
) -> list[tuple[int, float]] | None:
    """(doc_id, bm25) best first from the in-memory scorer; None when a query word is a
    phrase to the tokenizer (FTS5 must answer). Touches no database connection."""
    words = query_words(query)
    if not words or (groups is not None and not groups):
        return []
    terms = scorer.tokenizer.terms(" ".join(words))
    if len(terms) != len(words):
        return None
    return scorer.search(kind, terms, groups, limit)


def scored_each(
    scorer: TextScorer, kind: str, query: str, groups: Sequence[str], limit: int
) -> dict[str, list[tuple[int, float]]] | None:
    """`scored_docs` of each group alone, from one pass over the scorer's postings; None
    when a query word is a phrase to the tokenizer (FTS5 must answer)."""
    words = query_words(query)
    if not words:
        return {group: [] for group in groups}
    terms = scorer.tokenizer.terms(" ".join(words))
    if len(terms) != len(words):
        return None
    return scorer.search_each(kind, terms, groups, limit)


def search(
    conn: sqlite3.Connection,
    kind: str,
    query: str,
    groups: Sequence[str] | None,
    limit: int,
    scorer: TextScorer | None = None,
) -> list[TextHit]:
    """Top `limit` documents of `kind` (entity, edge, passage) by bm25, best first.

    With a `scorer` the same bm25 is computed from its in-memory postings (scorer.py); a
    query word the tokenizer splits in two (a phrase) is left to FTS5.
    """
    if scorer is not None:
        scored = scored_docs(scorer, kind, query, groups, limit)
        if scored is not None:
            return hits(conn, scored)
    expression = match_expression(query)
    if expression is None or (groups is not None and not groups):
        return []
    table = FTS_TABLES[kind]
    where, params = "", []
    if groups is not None:
        where = f" AND d.group_id IN ({','.join('?' * len(groups))})"
        params = list(groups)
    rows = conn.execute(
        f"SELECT d.owner_uuid, d.part, d.group_id, bm25({table}, {_COLUMN_WEIGHTS[kind]}) AS rank,"
        f" d.doc_id FROM {table} JOIN text_docs d ON d.doc_id = {table}.rowid"
        f" WHERE {table} MATCH ?{where} ORDER BY rank LIMIT ?",
        [expression, *params, limit],
    ).fetchall()
    return [TextHit(row[0], int(row[1]), row[2], -float(row[3]), int(row[4])) for row in rows]


def hits(conn: sqlite3.Connection, scored: list[tuple[int, float]]) -> list[TextHit]:
    """The scored documents' owners, parts and groups (documents gone since are skipped)."""
    if not scored:
        return []
    rows = {
        int(row[0]): row
        for row in conn.execute(
            "SELECT doc_id, owner_uuid, part, group_id FROM text_docs WHERE doc_id IN"
            f" ({','.join('?' * len(scored))})",
            [doc for doc, _ in scored],
        )
    }
    return [
        TextHit(str(rows[doc][1]), int(rows[doc][2]), str(rows[doc][3]), score, doc)
        for doc, score in scored
        if doc in rows
    ]


def coverage(
    conn: sqlite3.Connection,
    kind: str,
    query: str,
    found: Sequence[TextHit],
    scorer: TextScorer | None = None,
) -> dict[int, float]:
    """doc_id -> the share of the query's weight its document matches (0..1).

    A hit's bm25 over the best hit's says how it ranks, not whether it matches the question:
    the best hit of "job interview tips" matches "job" alone and still scores 1.0. Coverage
    weighs each query word by its idf over the whole table (`scorer.coverage_weight`); a word
    no document holds weighs most, so a query about something the corpus lacks covers little
    (docs/adr/0024-find-floor.md). The in-memory scorer answers when it can, FTS5 otherwise,
    with the same numbers.
    """
    docs = [hit.doc_id for hit in found]
    words = query_words(query)
    if not docs or not words:
        return {}
    if scorer is not None:
        terms = scorer.tokenizer.terms(" ".join(words))
        if len(terms) == len(words):
            return scorer.coverage(kind, terms, docs)
    table = FTS_TABLES[kind]
    (rows,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    marks = ",".join("?" * len(docs))
    matched = dict.fromkeys(docs, 0.0)
    total = 0.0
    for word in words:
        phrase = f'"{word}"'
        (holding,) = conn.execute(
            f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (phrase,)
        ).fetchone()
        weight = coverage_weight(int(rows), int(holding))
        total += weight
        for (doc,) in conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid IN ({marks})",
            [phrase, *docs],
        ):
            matched[int(doc)] += weight
    return {doc: value / total for doc, value in matched.items()} if total > 0.0 else matched


def passage_texts(
    conn: sqlite3.Connection, keys: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], str]:
    """The text of each (episode uuid, part) passage that exists, in one query."""
    if not keys:
        return {}
    owners = sorted({owner for owner, _ in keys})
    marks = ",".join("?" * len(owners))
    wanted = set(keys)
    found: dict[tuple[str, int], str] = {}
    for owner, part, content in conn.execute(
        "SELECT d.owner_uuid, d.part, p.content FROM text_docs d"
        " JOIN fts_passages p ON p.rowid = d.doc_id"
        f" WHERE d.kind='passage' AND d.owner_uuid IN ({marks})",
        owners,
    ):
        key = (str(owner), int(part))
        if key in wanted:
            found[key] = str(content)
    return found
