"""Ingestion and source deletion: knowledge_process_chunk, knowledge_delete_by_source,
knowledge_delete_chunk_episode (issue 14; K-ING, K-DEL; P-105, P-106, P-121).

process_chunk runs the workspace's extractor outside the writer (a model call never holds
up other writes), then in one batch resolves what it found against the group and appends
the episode, the new entities, the edges and the mentions. Dropped edges are only in the
result (K-ING-013).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import Field

from lcg.commands import handlers
from lcg.domain import rules
from lcg.domain.commands import AddEpisode, DeleteEpisodes, ProcessChunk
from lcg.domain.errors import InvalidParams
from lcg.domain.extraction import dropped_payload, extracted_names, oversized_warning
from lcg.domain.ids import DEFAULT_GROUP, EpisodeUuid, GroupId
from lcg.interfaces.app import App
from lcg.interfaces.params import GroupIdField, Params, Timestamp, required_text
from lcg.queries.similar_names import similar_names, source_aliases

telemetry = logging.getLogger("lcg.telemetry")

GROUP_IDS_RULE = "is required and must be a non-empty array of non-empty strings"
DeletionGroups = list[str] | None


class ProcessChunkParams(Params):
    chunk_text: str = required_text(rules.MAX_EPISODE_BODY, "The text to extract from.")
    chunk_id: str = required_text(rules.MAX_EPISODE_NAME, "The chunk's id (the episode name).")
    source_file: str = required_text(
        rules.MAX_SOURCE_DESCRIPTION // 2, "The file the chunk came from (.json: JSON)."
    )
    group_id: GroupIdField = DEFAULT_GROUP
    reference_time: Timestamp | None = Field(
        None, description="RFC 3339 time the chunk speaks of; default: now."
    )


class DeleteBySourceParams(Params):
    source_file: str = required_text(rules.MAX_SOURCE_DESCRIPTION, "The source to delete.")
    group_ids: DeletionGroups = Field(
        None, description="Required, non-empty: the groups to delete in (no default)."
    )


class DeleteChunkEpisodeParams(Params):
    chunk_id: str = required_text(rules.MAX_EPISODE_NAME, "The chunk whose episodes to delete.")
    group_ids: DeletionGroups = Field(
        None, description="Required, non-empty: the groups to delete in (no default)."
    )


def process_chunk(app: App, q: ProcessChunkParams) -> dict[str, Any]:
    """Extract entities and facts from a chunk of text into a group's graph: an episode for
    the chunk, its entities (resolved within the group by name, then by name embedding) and
    edges; an edge whose end names no entity is dropped and listed in dropped_edges."""
    started = time.monotonic()
    now = app.now()
    reference = (
        now if q.reference_time is None else rules.timestamp(q.reference_time, "reference_time")
    )
    extractor = app.writes.extractor
    extraction = extractor.extract(q.chunk_text, reference)
    episode = AddEpisode(
        group_id=GroupId(q.group_id),
        name=q.chunk_id,
        body=q.chunk_text,
        source="json" if q.source_file.lower().endswith(".json") else "text",
        source_description=f"{q.source_file}:{q.chunk_id}",
        reference_time=reference,
        new_uuid=EpisodeUuid(app.new_id()),
        now=now,
        chunk_id=q.chunk_id,
        source_file=q.source_file,
    )
    ws = app.reads
    names = extracted_names(extraction)
    similar = similar_names(
        ws.reader(),
        ws.vectors,
        ws.vectors.cache.embed,
        episode.group_id,
        names,
        ws.settings.tuning.name_similarity,
    )
    # a prefix alias within the source file wins over a near embedding (issue 26)
    similar.update(source_aliases(ws.reader(), episode.group_id, q.source_file, names))
    command = ProcessChunk(
        episode,
        extraction,
        extractor.name,
        extraction.model or extractor.model,
        app.new_id,
        similar,
    )
    decision = app.writes.writer.execute(lambda ctx: handlers.process_chunk(ctx, command))
    result: dict[str, Any] = {
        "success": True,
        "chunk_id": q.chunk_id,
        "source_file": q.source_file,
        "episode_uuid": episode.new_uuid,
        "nodes_extracted": decision.nodes_extracted,
        "edges_extracted": decision.edges_extracted,
        "edges_dropped_unresolvable": len(decision.dropped),
        "dropped_edges": dropped_payload(decision.dropped),
        "duration_seconds": round(time.monotonic() - started, 3),
    }
    threshold = app.reads.settings.chunk_advisory_max_chars
    warning = oversized_warning(q.chunk_text, threshold)
    if warning is not None:
        result["warning"] = warning
        telemetry.info(
            "chunk_text_oversized chunk_id=%s source_file=%s chunk_text_chars=%d "
            "threshold_chars=%d",
            q.chunk_id,
            q.source_file,
            len(q.chunk_text),
            threshold,
        )
    return result


def _groups(group_ids: DeletionGroups) -> tuple[GroupId, ...]:
    """K-DEL-001..007: required, non-empty, no blank entry; de-duplicated in order."""
    if not group_ids or any(not g.strip() for g in group_ids):
        raise InvalidParams("group_ids", GROUP_IDS_RULE)
    return tuple(dict.fromkeys(GroupId(g) for g in group_ids))


def delete_by_source(app: App, q: DeleteBySourceParams) -> dict[str, Any]:
    """Delete the episodes from a source file in the listed groups (group_ids required); the
    entities they mentioned stay."""
    command = DeleteEpisodes(_groups(q.group_ids), q.source_file, None, app.now())
    deleted = app.writes.writer.execute(lambda ctx: handlers.delete_episodes(ctx, command))
    return {
        "success": True,
        "source_file": q.source_file,
        "deleted_count": len(deleted),
        "deleted_uuids": deleted,
    }


def delete_chunk_episode(app: App, q: DeleteChunkEpisodeParams) -> dict[str, Any]:
    """Delete the episodes of a chunk id in the listed groups (group_ids required); the
    entities they mentioned stay."""
    command = DeleteEpisodes(_groups(q.group_ids), None, q.chunk_id, app.now())
    deleted = app.writes.writer.execute(lambda ctx: handlers.delete_episodes(ctx, command))
    return {
        "success": True,
        "chunk_id": q.chunk_id,
        "deleted_count": len(deleted),
        "deleted_uuids": deleted,
    }
