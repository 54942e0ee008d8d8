"""The one operation table: name, scope, parameter model, handler, description.

MCP tools, socket methods and CLI commands are all generated from it (K-MCP-006). Only the
operations that exist are listed; later issues add rows, never transport code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lcg.domain.errors import InvalidParams
from lcg.interfaces import params as p
from lcg.interfaces.app import App
from lcg.projections.runner import Progress


class Scope(StrEnum):
    READ = "read"
    WRITE = "write"
    CYPHER = "cypher"
    ADMIN = "admin"
    MEMORY = "memory"  # reserved for the agent-memory tools to come; advertises nothing yet


Handler = Callable[[App, Any, Progress | None], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Operation:
    """One row of the table."""

    name: str
    scope: Scope
    params: type[p.Params]
    handler: Handler
    description: str

    @property
    def read_only(self) -> bool:
        return self.scope is Scope.READ

    def input_schema(self) -> dict[str, Any]:
        return self.params.model_json_schema()


def _op(name: str, scope: Scope, model: type[p.Params], handler: Handler, doc: str) -> Operation:
    return Operation(name, scope, model, handler, doc)


OPERATIONS: tuple[Operation, ...] = (
    _op(
        "knowledge_status",
        Scope.READ,
        p.NoParams,
        lambda a, q, _: a.status(q),
        "Counts, per-group WAL head and applied seq, hydration and pinned state.",
    ),
    _op(
        "knowledge_add_episode",
        Scope.WRITE,
        p.AddEpisodeParams,
        lambda a, q, _: a.add_episode(q),
        "Store a piece of content (text, message or json) as an episode of a group.",
    ),
    _op(
        "knowledge_assert_entity",
        Scope.WRITE,
        p.AssertEntityParams,
        lambda a, q, _: a.assert_entity(q),
        "Create or fully replace an entity; identity is (name, group_id) unless entity_uuid "
        "is given (strict, group-scoped). Omitted summary/attributes are cleared.",
    ),
    _op(
        "knowledge_assert_relationship",
        Scope.WRITE,
        p.AssertRelationshipParams,
        lambda a, q, _: a.assert_relationship(q),
        "Create or replace the active edge (source, predicate, target) of a group; endpoints "
        "resolve only inside group_id (use knowledge_add_cross_group_edge across groups).",
    ),
    _op(
        "knowledge_get_episodes",
        Scope.READ,
        p.GetEpisodesParams,
        lambda a, q, _: a.get_episodes(q),
        "The newest episodes of one group, newest first.",
    ),
    _op(
        "knowledge_get_nodes_by_group",
        Scope.READ,
        p.ByGroupParams,
        lambda a, q, _: a.get_nodes_by_group(q),
        "Entities of the groups. Omitted/null group_ids: all groups; [] matches nothing.",
    ),
    _op(
        "knowledge_get_edges_by_group",
        Scope.READ,
        p.ByGroupParams,
        lambda a, q, _: a.get_edges_by_group(q),
        "Active edges of the groups. Omitted/null group_ids: all groups; [] matches nothing.",
    ),
    _op(
        "knowledge_get_edges_by_uuids",
        Scope.READ,
        p.EdgesByUuidsParams,
        lambda a, q, _: a.get_edges_by_uuids(q),
        "Edges by uuid, in the order asked; unknown uuids are skipped.",
    ),
    _op(
        "knowledge_list_entities",
        Scope.READ,
        p.ListEntitiesParams,
        lambda a, q, _: a.list_entities(q),
        "Entities with episode provenance. Omitted, null or [] group_ids: all groups.",
    ),
    _op(
        "knowledge_list_relationships",
        Scope.READ,
        p.ListRelationshipsParams,
        lambda a, q, _: a.list_relationships(q),
        "Active edges. Omitted, null or [] group_ids: all groups.",
    ),
    _op(
        "knowledge_get_entity_neighbors",
        Scope.READ,
        p.NeighborsParams,
        lambda a, q, _: a.get_entity_neighbors(q),
        "Edges touching an entity and the entities at their other ends.",
    ),
    _op(
        "knowledge_delete_episode",
        Scope.WRITE,
        p.DeleteEpisodeParams,
        lambda a, q, _: a.delete_episode(q),
        "Delete one episode in its own group; entities it mentioned stay. Unknown: no-op.",
    ),
    _op(
        "knowledge_delete_by_group",
        Scope.ADMIN,
        p.DeleteByGroupParams,
        lambda a, q, _: a.delete_by_group(q),
        "Purge every entity, edge and episode of the groups (confirm: true, or dry_run).",
    ),
    _op(
        "knowledge_clear_all",
        Scope.WRITE,
        p.ClearAllParams,
        lambda a, q, _: a.clear_all(q),
        "Drop the whole graph (confirm: true); the WAL is erased unless preserve_wal.",
    ),
    _op(
        "knowledge_rebuild_from_wal",
        Scope.ADMIN,
        p.RebuildFromWalParams,
        lambda a, q, progress: a.rebuild_from_wal(q, progress),
        "Rebuild one group's projections from its WAL, from_seq <= seq <= to_seq. A full "
        "rebuild of a non-empty group needs force_clear; a bounded one pins the group.",
    ),
    _op(
        "knowledge_close",
        Scope.ADMIN,
        p.NoParams,
        lambda a, q, _: a.close(q),
        "Close this process's workspace and stop serving: the socket service answers, then "
        'shuts down; a standalone MCP server exits. Returns {"status": "closed"}.',
    ),
)

SEARCH_OPERATIONS: tuple[Operation, ...] = (
    _op(
        "knowledge_find_entities",
        Scope.READ,
        p.FindParams,
        lambda a, q, _: a.find_entities(q),
        "Hybrid entity search: BM25 over [name, summary] + name and summary vectors, fused, "
        "plus graph neighbours of strong hits. Omitted/null group_ids: all; [] matches nothing.",
    ),
    _op(
        "knowledge_find_relationships",
        Scope.READ,
        p.FindParams,
        lambda a, q, _: a.find_relationships(q),
        "Hybrid edge search: BM25 over [name, fact] + fact vectors, fused. Omitted/null "
        "group_ids: all groups; [] matches nothing.",
    ),
    _op(
        "knowledge_search_passages",
        Scope.READ,
        p.SearchPassagesParams,
        lambda a, q, _: a.search_passages(q),
        "Search episode content (passages) by meaning and by words. Omitted, null or [] "
        "group_ids: all groups. min_score is a floor on the best leg score.",
    ),
    _op(
        "knowledge_get_entities_by_source",
        Scope.READ,
        p.EntitiesBySourceParams,
        lambda a, q, _: a.get_entities_by_source(q),
        "Entities mentioned by episodes from a source (source_file or source_description). "
        "Omitted, null or [] group_ids: all groups.",
    ),
    _op(
        "knowledge_backfill_summary_embeddings",
        Scope.ADMIN,
        p.BackfillSummaryParams,
        lambda a, q, progress: a.backfill_summary_embeddings(q, progress),
        "Re-embed every non-empty entity summary of group_id (required) so summaries are "
        "searchable by meaning; dry_run counts the candidates.",
    ),
    _op(
        "knowledge_build_indices",
        Scope.ADMIN,
        p.NoParams,
        lambda a, q, _: a.build_indices(q),
        "Bring the vector and text indexes in line with the graph and write them to disk. "
        "Idempotent.",
    ),
)

OPERATIONS = OPERATIONS + SEARCH_OPERATIONS

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}


class UnknownMethod(InvalidParams):
    """No operation has this name."""

    def __init__(self, name: str) -> None:
        super().__init__("method", "must name a known operation", f"Method not found: {name}")
        self.method = name


def dispatch(
    app: App, name: str, raw: dict[str, Any] | None, progress: Progress | None = None
) -> dict[str, Any]:
    """Validate `raw` against the operation's model and run it."""
    operation = BY_NAME.get(name)
    if operation is None:
        raise UnknownMethod(name)
    parsed = p.parse(operation.params, raw)
    return dict(operation.handler(app, parsed, progress))
