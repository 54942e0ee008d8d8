"""The application: one method per operation, building commands at the edge (clock, uuids)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Literal, TypedDict

from lcg.commands import admin, handlers, indexing
from lcg.domain import rules
from lcg.domain.commands import (
    AddEpisode,
    AssertEntity,
    AssertRelationship,
    DeleteEpisode,
)
from lcg.domain.ids import EdgeUuid, EntityUuid, EpisodeUuid, GroupId
from lcg.interfaces import params as p
from lcg.interfaces.workspace import Workspace
from lcg.projections.runner import Progress
from lcg.queries import graph_reads, search, status
from lcg.queries.fusion import Fusion

NewId = Callable[[], str]


class CloseResult(TypedDict):
    status: Literal["closed"]


def uuid4_text() -> str:
    """Random (v4) ids: their first 8 hex digits serve as short ids (seed 001)."""
    return str(uuid.uuid4())


class App:
    """What every surface (CLI, MCP, socket) calls; holds no state of its own."""

    def __init__(self, workspace: Workspace, new_id: NewId = uuid4_text) -> None:
        self.workspace = workspace
        self.new_id = new_id

    # -- writes ---------------------------------------------------------------------------

    def assert_entity(self, q: p.AssertEntityParams) -> handlers.AssertEntityResult:
        command = AssertEntity(
            group_id=rules.group_id(q.group_id),
            name=q.name,
            entity_uuid=None if q.entity_uuid is None else EntityUuid(q.entity_uuid),
            labels=rules.labels(q.labels),
            summary=q.summary or "",
            attributes=rules.attributes(q.attributes),
            new_uuid=EntityUuid(self.new_id()),
            now=self.workspace.clock(),
        )
        return self.workspace.writer.execute(lambda ctx: handlers.assert_entity(ctx, command))

    def assert_relationship(
        self, q: p.AssertRelationshipParams
    ) -> handlers.AssertRelationshipResult:
        command = AssertRelationship(
            group_id=rules.group_id(q.group_id),
            source_name=q.source_name,
            target_name=q.target_name,
            predicate=q.predicate,
            fact=q.fact,
            relation_type=q.relation_type,
            attributes=rules.attributes(q.attributes),
            valid_at=None if q.valid_at is None else rules.timestamp(q.valid_at, "valid_at"),
            new_uuid=EdgeUuid(self.new_id()),
            now=self.workspace.clock(),
        )
        return self.workspace.writer.execute(lambda ctx: handlers.assert_relationship(ctx, command))

    def add_episode(self, q: p.AddEpisodeParams) -> handlers.AddEpisodeResult:
        now = self.workspace.clock()
        command = AddEpisode(
            group_id=rules.group_id(q.group_id),
            name=q.name,
            body=q.episode_body,
            source=q.source,
            source_description=q.source_description,
            reference_time=(
                now
                if q.reference_time is None
                else rules.timestamp(q.reference_time, "reference_time")
            ),
            new_uuid=EpisodeUuid(self.new_id()),
            now=now,
        )
        return self.workspace.writer.execute(lambda ctx: handlers.add_episode(ctx, command))

    def delete_episode(self, q: p.DeleteEpisodeParams) -> handlers.DeleteEpisodeResult:
        command = DeleteEpisode(EpisodeUuid(q.episode_uuid), self.workspace.clock())
        return self.workspace.writer.execute(lambda ctx: handlers.delete_episode(ctx, command))

    def delete_by_group(self, q: p.DeleteByGroupParams) -> admin.DeleteByGroupResult:
        groups = [rules.group_id(g, "group_ids") for g in dict.fromkeys(q.group_ids)]
        return admin.delete_by_group(
            self.workspace.writer,
            groups,
            confirm=q.confirm,
            dry_run=q.dry_run,
            now=self.workspace.clock,
        )

    def clear_all(self, q: p.ClearAllParams) -> admin.ClearAllResult:
        return admin.clear_all(
            self.workspace.writer, confirm=q.confirm, preserve_wal=q.preserve_wal
        )

    def rebuild_from_wal(
        self, q: p.RebuildFromWalParams, progress: Progress | None = None
    ) -> admin.RebuildResult:
        request = admin.RebuildRequest(
            group_id=rules.group_id(q.group_id),
            from_seq=q.from_seq,
            to_seq=q.to_seq,
            dry_run=q.dry_run,
            force_clear=q.force_clear,
        )
        return admin.rebuild_from_wal(self.workspace.writer, request, progress)

    # -- lifecycle ------------------------------------------------------------------------

    def close(self, _: p.Params | None = None) -> CloseResult:
        """knowledge_close (P-016). The serving process (lcg.interfaces.service) stops after
        answering; an in-process caller's workspace closes when its `with` block ends."""
        return CloseResult(status="closed")

    def backfill_summary_embeddings(
        self, q: p.BackfillSummaryParams, progress: Progress | None = None
    ) -> indexing.BackfillResult:
        return indexing.backfill_summary_embeddings(
            self.workspace.writer,
            q.group_id,
            dry_run=q.dry_run,
            now=self.workspace.clock,
            progress=progress,
        )

    def build_indices(self, _: p.Params | None = None) -> indexing.BuildIndicesResult:
        return indexing.build_indices(self.workspace.writer, self.workspace.vectors.checkpoint)

    # -- search ---------------------------------------------------------------------------

    def _search(self) -> search.SearchContext:
        ws = self.workspace
        fusion: Fusion = "max" if ws.settings.search_fusion == "max" else "rrf"
        return search.SearchContext(
            conn=ws.reader(),
            vectors=ws.vectors,
            embed_query=lambda text: ws.embedder.embed([text])[0],
            fusion=fusion,
            expand_depth=ws.settings.search_expand_depth,
            text_scorer=ws.text_scorer if ws.settings.bm25_engine == "memory" else None,
            pool=ws.search_pool,
        )

    def find_entities(self, q: p.FindParams) -> search.EntitySearchResult:
        return search.find_entities(self._search(), q.query, q.group_ids, q.num_results)

    def find_relationships(self, q: p.FindParams) -> search.EdgeSearchResult:
        return search.find_relationships(self._search(), q.query, q.group_ids, q.num_results)

    def search_passages(self, q: p.SearchPassagesParams) -> search.PassageSearchResult:
        return search.search_passages(
            self._search(), q.query, q.group_ids, q.num_results, q.min_score
        )

    def get_entities_by_source(self, q: p.EntitiesBySourceParams) -> graph_reads.SourceResult:
        return graph_reads.get_entities_by_source(
            self.workspace.reader(), q.source, q.group_ids, q.num_results
        )

    # -- reads ----------------------------------------------------------------------------

    def status(self, _: p.Params | None = None) -> status.Status:
        ws = self.workspace
        contract = ws.embedder.contract
        embedding = status.Embedding(kind=contract.kind, model=contract.model, dim=contract.dim)
        if ws.read_only:
            derived = status.Derived(vector_count=None, index_error=None)
            failure = None
        else:
            derived = status.Derived(
                vector_count=ws.vectors.count(), index_error=ws.writer.listener_failure
            )
            failure = ws.runner.failure
        return status.status(ws.reader(), ws.log, ws.runner.names, failure, embedding, derived)

    def get_episodes(self, q: p.GetEpisodesParams) -> graph_reads.EpisodesResult:
        return graph_reads.get_episodes(self.workspace.reader(), GroupId(q.group_id), q.last_n)

    def list_entities(self, q: p.ListEntitiesParams) -> graph_reads.NodesResult:
        return graph_reads.list_entities(self.workspace.reader(), q.group_ids, q.num_results)

    def list_relationships(self, q: p.ListRelationshipsParams) -> graph_reads.EdgesResult:
        return graph_reads.list_relationships(self.workspace.reader(), q.group_ids, q.num_results)

    def get_nodes_by_group(self, q: p.ByGroupParams) -> graph_reads.NodesResult:
        return graph_reads.get_nodes_by_group(self.workspace.reader(), q.group_ids)

    def get_edges_by_group(self, q: p.ByGroupParams) -> graph_reads.EdgesResult:
        return graph_reads.get_edges_by_group(self.workspace.reader(), q.group_ids)

    def get_edges_by_uuids(self, q: p.EdgesByUuidsParams) -> graph_reads.EdgesResult:
        return graph_reads.get_edges_by_uuids(self.workspace.reader(), q.uuids)

    def get_entity_neighbors(self, q: p.NeighborsParams) -> graph_reads.NeighborsResult:
        return graph_reads.get_entity_neighbors(
            self.workspace.reader(), q.entity_uuid, q.group_ids, q.num_results
        )
