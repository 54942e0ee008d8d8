"""knowledge_query_cypher's answer: the rows of one read-only Cypher statement (ADR 0039)."""

from __future__ import annotations

from typing import TypedDict

from lcg.projections.cypher.store import CypherGraph


class CypherResult(TypedDict):
    """The statement's columns, in order, and its rows keyed by column."""

    columns: list[str]
    rows: list[dict[str, object]]


def query_cypher(graph: CypherGraph, query: str) -> CypherResult:
    """Run `query` as given (no interpolation, no coercion) against the Cypher projection."""
    columns, rows = graph.query(query)
    return CypherResult(columns=columns, rows=rows)
