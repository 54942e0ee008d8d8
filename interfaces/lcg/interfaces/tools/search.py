"""Hybrid retrieval over entities, relationships and passages (P-110..P-112, K-SRC)."""

from __future__ import annotations

from pydantic import Field

from lcg.domain import rules
from lcg.interfaces.app import App
from lcg.interfaces.params import GroupIdsField, NumResults, required_text
from lcg.interfaces.read_after import ReadAfterParams
from lcg.queries import graph_reads, reads, relevance, search


class FindParams(ReadAfterParams):
    query: str = required_text(rules.MAX_FACT, "What to look for, in words.")
    group_ids: GroupIdsField = None
    num_results: NumResults = Field(10, description="How many results at most.")
    relevance_floor: bool = Field(
        True,
        description=(
            "true (default): only hits with evidence of relevance, with the bundled embedding"
            " model: a name, summary or fact vector whose cosine clears the floor calibrated"
            " for it, or a keyword match of query words carrying at least 40% of the query's"
            " weight (idf); plus graph neighbours of those. A query nothing matches returns"
            " nothing. false: the nearest candidates, however weak."
        ),
    )


class SearchPassagesParams(ReadAfterParams):
    query: str = required_text(rules.MAX_FACT, "What to look for, in words.")
    num_results: int = Field(10, description="Clamped to 1-100.")
    min_score: float = Field(
        search.PASSAGE_FLOOR, description="Clamped to 0.0-1.0; floor on the best leg score."
    )
    group_ids: GroupIdsField = None


class EntitiesBySourceParams(ReadAfterParams):
    source: str = Field(
        min_length=1,
        max_length=rules.MAX_SOURCE_DESCRIPTION,
        description="An episode's source_file or source_description.",
    )
    num_results: NumResults = Field(100, description="How many entities at most.")
    group_ids: GroupIdsField = None


def search_context(app: App) -> search.SearchContext:
    """What a search reads, as this workspace's settings configure it."""
    return reads.search_context(app.reads)


def _floors(app: App, q: FindParams) -> relevance.Floors | None:
    """The relevance floors of this workspace's embedding model, unless the call waived them."""
    if not q.relevance_floor:
        return None
    return relevance.for_model(app.reads.embedder.contract.model)


def find_entities(app: App, q: FindParams) -> search.EntitySearchResult:
    """Hybrid entity search: BM25 over [name, summary] + name and summary vectors, fused,
    plus graph neighbours of strong hits; only relevant hits unless relevance_floor is false.
    Omitted/null group_ids: all; [] matches nothing."""
    return search.find_entities(
        search_context(app), q.query, q.group_ids, q.num_results, _floors(app, q)
    )


def find_relationships(app: App, q: FindParams) -> search.EdgeSearchResult:
    """Hybrid edge search: BM25 over [name, fact] + fact vectors, fused; only relevant hits
    unless relevance_floor is false. Omitted/null group_ids: all groups; [] matches nothing."""
    return search.find_relationships(
        search_context(app), q.query, q.group_ids, q.num_results, _floors(app, q)
    )


def search_passages(app: App, q: SearchPassagesParams) -> search.PassageSearchResult:
    """Search episode content (passages) by meaning and by words, then through the graph:
    chunks mentioning the entities the strongest hits' chunks mention join at half their
    score (ranks.graph). Omitted, null or [] group_ids: all groups. min_score is a floor on
    the best leg score of the direct hits."""
    return search.search_passages(
        search_context(app), q.query, q.group_ids, q.num_results, q.min_score
    )


def get_entities_by_source(app: App, q: EntitiesBySourceParams) -> graph_reads.SourceResult:
    """Entities mentioned by episodes from a source (source_file or source_description).
    Omitted, null or [] group_ids: all groups."""
    return graph_reads.get_entities_by_source(
        app.reads.reader(), q.source, q.group_ids, q.num_results
    )
