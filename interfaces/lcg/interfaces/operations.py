"""The one operation table: each row names a tool, its scope, its params model and its function.

MCP tools, socket methods and CLI commands are all generated from it (K-MCP-006). A row's
function is a typed `(app, params) -> result` in a per-feature module of
`lcg.interfaces.tools`; its docstring is the description clients see. Adding a tool adds a
row here, never transport code (docs/architecture.md, "Adding a tool").
"""

from __future__ import annotations

import difflib
import inspect
import sqlite3
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar, cast

from lcg.commands import job_planner
from lcg.domain.errors import InvalidParams
from lcg.interfaces import read_after
from lcg.interfaces.app import App
from lcg.interfaces.params import NoParams, P, Params, parse
from lcg.interfaces.read_after import ReadAfterParams
from lcg.interfaces.tools import (
    admin,
    cross_group,
    curation,
    cypher,
    episodes,
    graph,
    ingest,
    memory,
    memory_image,
    memory_jobs,
    memory_read,
    memory_recall,
    relation_typing,
    search,
)
from lcg.projections.damage import is_corruption
from lcg.projections.positions import read_position
from lcg.projections.runner import Progress, ProjectionError

R = TypeVar("R", bound=Mapping[str, object])


class Scope(StrEnum):
    READ = "read"
    WRITE = "write"
    CYPHER = "cypher"
    ADMIN = "admin"
    MEMORY = "memory"  # the lambo_* agent-memory tools (seed 001)


@dataclass(frozen=True, slots=True)
class Operation(Generic[P, R]):
    """One row of the table: a tool function and what the surfaces need to expose it."""

    name: str
    scope: Scope
    params: type[P]
    run: Callable[[App, P], R]
    reads: bool = False  # outside read scope, changes nothing (memory reads, the mark list)

    @property
    def description(self) -> str:
        """The tool function's docstring, as MCP clients and `lcg call --help` show it."""
        return " ".join((inspect.getdoc(self.run) or "").split())

    @property
    def read_only(self) -> bool:
        """Read scope, or a memory read (recall, inspect, stale, saints, stats): MCP's
        readOnlyHint. Recall's access counts are bookkeeping, appended off its path."""
        return self.scope is Scope.READ or self.reads

    def input_schema(self) -> dict[str, Any]:
        return self.params.model_json_schema()

    def call(
        self, app: App, raw: dict[str, Any] | None, progress: Progress | None = None
    ) -> dict[str, Any]:
        """Validate `raw` against the params model and run the tool.

        An SQLite error that means damaged bytes is not passed on as an answer: the workspace
        refuses writes from then on and the next open rebuilds the file (ADR 0020)."""
        try:
            params = parse(self.params, raw)
            wanted = read_after.requested() if self.read_only else {}
            if isinstance(params, ReadAfterParams) and params.min_seq is not None:
                wanted = read_after.merged(wanted, read_after.targets(params))
            if wanted:
                _wait_applied(app, wanted)
            if self.read_only and self.scope is not Scope.MEMORY:
                app.workspace.read_hold.wait()  # a summary backfill's run (K-SEM-011)
            return dict(self.run(app.with_progress(progress), params))
        except (sqlite3.DatabaseError, ProjectionError) as error:
            if not is_corruption(error):
                raise
            raise app.workspace.met_corruption(error) from error


AnyOperation = Operation[Params, Mapping[str, object]]


def _wait_applied(app: App, wanted: dict[str, int]) -> None:
    """Hold the read until this node has applied what `min_seq` names (ADR 0076): the
    tool's argument, or the request's (ADR 0086: the lambo reads, whose arguments the seed
    fixes)."""
    workspace = app.workspace
    names = workspace.runner.names
    wait_ms = workspace.settings.tuning.get_int("store", "min_seq_wait_ms")
    read_after.wait_applied(
        lambda group: read_position(workspace.reader(), names, group).position, wanted, wait_ms
    )


def _row(
    name: str, scope: Scope, params: type[P], run: Callable[[App, P], R], *, reads: bool = False
) -> AnyOperation:
    """A typed row (params and function are checked against each other), stored untyped."""
    return cast(AnyOperation, Operation(name, scope, params, run, reads))


READ, WRITE, ADMIN, MEMORY = Scope.READ, Scope.WRITE, Scope.ADMIN, Scope.MEMORY

OPERATIONS: tuple[AnyOperation, ...] = (
    _row("knowledge_status", READ, NoParams, admin.status),
    _row("knowledge_add_episode", WRITE, episodes.AddEpisodeParams, episodes.add_episode),
    _row("knowledge_process_chunk", WRITE, ingest.ProcessChunkParams, ingest.process_chunk),
    _row("knowledge_assert_entity", WRITE, graph.AssertEntityParams, graph.assert_entity),
    _row(
        "knowledge_assert_relationship",
        WRITE,
        graph.AssertRelationshipParams,
        graph.assert_relationship,
    ),
    _row("knowledge_get_episodes", READ, episodes.GetEpisodesParams, episodes.get_episodes),
    _row("knowledge_get_nodes_by_group", READ, graph.ByGroupParams, graph.get_nodes_by_group),
    _row("knowledge_get_edges_by_group", READ, graph.ByGroupParams, graph.get_edges_by_group),
    _row("knowledge_get_edges_by_uuids", READ, graph.EdgesByUuidsParams, graph.get_edges_by_uuids),
    _row("knowledge_list_entities", READ, graph.ListEntitiesParams, graph.list_entities),
    _row(
        "knowledge_list_relationships",
        READ,
        graph.ListRelationshipsParams,
        graph.list_relationships,
    ),
    _row("knowledge_get_entity_neighbors", READ, graph.NeighborsParams, graph.get_entity_neighbors),
    _row("knowledge_delete_episode", WRITE, episodes.DeleteEpisodeParams, episodes.delete_episode),
    _row("knowledge_delete_by_source", WRITE, ingest.DeleteBySourceParams, ingest.delete_by_source),
    _row(
        "knowledge_delete_chunk_episode",
        WRITE,
        ingest.DeleteChunkEpisodeParams,
        ingest.delete_chunk_episode,
    ),
    _row("knowledge_delete_by_group", ADMIN, admin.DeleteByGroupParams, admin.delete_by_group),
    _row("knowledge_clear_all", WRITE, admin.ClearAllParams, admin.clear_all),
    _row("knowledge_rebuild_from_wal", ADMIN, admin.RebuildFromWalParams, admin.rebuild_from_wal),
    _row(
        "knowledge_rebuild_status",
        READ,
        admin.RebuildStatusParams,
        admin.rebuild_status,
        reads=True,
    ),
    _row("knowledge_dump_wal", ADMIN, admin.DumpWalParams, admin.dump_wal),
    _row("knowledge_wal_mark_create", ADMIN, admin.WalMarkCreateParams, admin.wal_mark_create),
    _row(
        "knowledge_wal_mark_list", ADMIN, admin.WalMarkListParams, admin.wal_mark_list, reads=True
    ),
    _row("knowledge_wal_mark_delete", ADMIN, admin.WalMarkDeleteParams, admin.wal_mark_delete),
    _row("knowledge_prepare_checkpoint", ADMIN, NoParams, admin.prepare_checkpoint),
    _row("knowledge_recover", ADMIN, admin.RecoverParams, admin.recover),
    _row("knowledge_recover_full", ADMIN, NoParams, admin.recover_full),
    _row("knowledge_close", ADMIN, NoParams, admin.close),
    _row("knowledge_find_entities", READ, search.FindParams, search.find_entities),
    _row("knowledge_find_relationships", READ, search.FindParams, search.find_relationships),
    _row("knowledge_search_passages", READ, search.SearchPassagesParams, search.search_passages),
    _row(
        "knowledge_query_cypher",
        Scope.CYPHER,
        cypher.QueryCypherParams,
        cypher.query_cypher,
        reads=True,  # Cypher that writes is refused (ADR 0039)
    ),
    _row(
        "knowledge_get_entities_by_source",
        READ,
        search.EntitiesBySourceParams,
        search.get_entities_by_source,
    ),
    _row(
        "knowledge_backfill_summary_embeddings",
        ADMIN,
        admin.BackfillSummaryParams,
        admin.backfill_summary_embeddings,
    ),
    _row("knowledge_build_indices", ADMIN, NoParams, admin.build_indices),
    _row("knowledge_merge_entities", WRITE, curation.MergeEntitiesParams, curation.merge_entities),
    _row("knowledge_validate_corrections", READ, NoParams, curation.validate_corrections),
    _row(
        "knowledge_apply_corrections",
        WRITE,
        curation.ApplyCorrectionsParams,
        curation.apply_corrections,
    ),
    _row(
        "knowledge_add_cross_group_edge",
        WRITE,
        cross_group.AddCrossGroupEdgeParams,
        cross_group.add_cross_group_edge,
    ),
    _row(
        "knowledge_rebind_pointers",
        ADMIN,
        cross_group.RebindPointersParams,
        cross_group.rebind_pointers,
    ),
    _row(
        "knowledge_reprocess_entity_types",
        WRITE,
        relation_typing.ReprocessParams,
        relation_typing.reprocess_entity_types,
    ),
    _row(
        "knowledge_canonicalize_relations",
        WRITE,
        relation_typing.CanonicalizeParams,
        relation_typing.canonicalize_relations,
    ),
    _row(
        "knowledge_backfill_relation_types",
        WRITE,
        relation_typing.BackfillParams,
        relation_typing.backfill_relation_types,
    ),
    _row(
        "knowledge_reprocess_relation_types",
        WRITE,
        relation_typing.ReprocessParams,
        relation_typing.reprocess_relation_types,
    ),
    _row(
        "lambo_recall", MEMORY, memory_recall.RecallParams, memory_recall.lambo_recall, reads=True
    ),
    _row("lambo_derive", MEMORY, memory.DeriveParams, memory.lambo_derive),
    _row("lambo_record_action", MEMORY, memory.RecordActionParams, memory.lambo_record_action),
    _row("lambo_reserve", MEMORY, memory.ReserveParams, memory.lambo_reserve),
    _row("lambo_stats", MEMORY, memory.StatsParams, memory.lambo_stats, reads=True),
    _row("lambo_inspect", MEMORY, memory_read.InspectParams, memory_read.lambo_inspect, reads=True),
    _row("lambo_stale", MEMORY, memory_read.StaleParams, memory_read.lambo_stale, reads=True),
    _row("lambo_saints", MEMORY, memory_read.SaintsParams, memory_read.lambo_saints, reads=True),
    # listed only with client vectors on (M-IMG-001: lcg.interfaces.scopes.Visibility)
    _row(
        "lambo_derive_image",
        MEMORY,
        memory_image.DeriveImageParams,
        memory_image.lambo_derive_image,
    ),
)

# The operator's handles on the memory jobs (`lcg canon ...`, `lcg gc run`): dispatched here
# and by the socket service, never advertised over MCP (agents see the seeds' tools only).
OPERATOR_OPERATIONS: tuple[AnyOperation, ...] = (
    _row("lcg_canon_status", ADMIN, memory_jobs.CanonParams, memory_jobs.canon_status),
    _row("lcg_canon_run", ADMIN, memory_jobs.CanonParams, memory_jobs.canon_run),
    _row("lcg_canon_history", ADMIN, memory_jobs.HistoryParams, memory_jobs.canon_history),
    _row("lcg_gc_run", ADMIN, memory_jobs.GcParams, memory_jobs.gc_run),
)

BY_NAME: dict[str, AnyOperation] = {op.name: op for op in (*OPERATIONS, *OPERATOR_OPERATIONS)}


class UnknownMethod(InvalidParams):
    """No operation has this name; the closest names are suggested."""

    def __init__(self, name: str) -> None:
        close = difflib.get_close_matches(name, list(BY_NAME), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        super().__init__("method", "must name a known operation", f"Method not found: {name}{hint}")
        self.method = name


_JOB_RUNS = frozenset(op.name for op in OPERATOR_OPERATIONS)  # they wait for the plan


def dispatch(
    app: App, name: str, raw: dict[str, Any] | None, progress: Progress | None = None
) -> dict[str, Any]:
    """Validate `raw` against the operation's model and run it. Meanwhile the memory jobs'
    planning worker steps aside (ADR 0045), except for the operator's own job runs, which
    wait for the plan."""
    operation = BY_NAME.get(name)
    if operation is None:
        raise UnknownMethod(name)
    with nullcontext() if name in _JOB_RUNS else job_planner.serving():
        return operation.call(app, raw, progress)
