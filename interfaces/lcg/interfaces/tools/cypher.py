"""Raw Cypher over the graph's Cypher projection (P-113, K-SCP-006..013, ADR 0039)."""

from __future__ import annotations

from pydantic import Field

from lcg.interfaces.app import App
from lcg.interfaces.read_after import ReadAfterParams
from lcg.queries import cypher

MAX_QUERY = 20_000


class QueryCypherParams(ReadAfterParams):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY,
        description="One Cypher read statement, sent to the engine exactly as given. Entity:"
        " uuid, group_id, name, summary, labels, attributes (JSON text), created_at. RELATES:"
        " uuid, group_id, name, fact, relation_type, attributes, valid_at, created_at.",
    )


def query_cypher(app: App, q: QueryCypherParams) -> cypher.CypherResult:
    """Run one raw Cypher read statement, as given (no interpolation, no coercion), over
    (:Entity) nodes and live [:RELATES] edges (name: the predicate). Returns {columns, rows}.
    Cypher that writes (CREATE, MERGE, SET, DELETE, DROP...) is refused: such a change would
    bypass the WAL, compute no embeddings, and be lost at the next rebuild."""
    return cypher.query_cypher(app.reads.cypher, q.query)
