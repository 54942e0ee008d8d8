"""Command handlers: load what the decider needs from the projection, decide, append."""

from __future__ import annotations

from typing import TypedDict

from lcg.commands.writer import WriteContext
from lcg.domain import deciders, rules
from lcg.domain.commands import (
    AddEpisode,
    AssertEntity,
    AssertRelationship,
    DeleteEpisode,
    DeleteEpisodes,
    ProcessChunk,
    PurgeGroup,
)
from lcg.domain.extraction import resolve
from lcg.projections.graph import state
from lcg.projections.memory import state as memory_state
from lcg.projections.vectors import catalog


class AssertEntityResult(TypedDict):
    entity_uuid: str
    created: bool
    embedding_warning: str | None
    embedding_stale: list[str]


class AssertRelationshipResult(TypedDict):
    edge_uuid: str
    created: bool
    embedding_warning: str | None
    embedding_stale: list[str]


class AddEpisodeResult(TypedDict):
    episode_uuid: str


class DeleteEpisodeResult(TypedDict):
    status: str


def assert_entity(ctx: WriteContext, command: AssertEntity) -> AssertEntityResult:
    lookup = deciders.EntityLookup(
        by_uuid=(
            None
            if command.entity_uuid is None
            else state.entity_by_uuid(ctx.conn, command.entity_uuid)
        ),
        by_name=state.entity_by_name(ctx.conn, command.group_id, command.name),
    )
    decision = deciders.decide_assert_entity(command, lookup)
    stale: list[str] = []
    if not decision.created:
        stale = _stale(
            ctx,
            decision.entity_uuid,
            {catalog.NAME: command.name.strip(), catalog.SUMMARY: command.summary.strip()},
        )
    ctx.append(command.group_id, decision.events)
    return AssertEntityResult(
        entity_uuid=decision.entity_uuid,
        created=decision.created,
        embedding_warning=_stale_warning(stale),
        embedding_stale=stale,
    )


def _stale(ctx: WriteContext, owner: str, texts: dict[str, str]) -> list[str]:
    """The write-once embeddings (K-AST-017/038) that no longer match the asserted text."""
    stale = []
    for embedding, current in texts.items():
        if not current:  # nothing to embed: a blank summary's vector is dropped (catalog v2)
            continue
        embedded = catalog.embedded_text(ctx.conn, owner, embedding)
        if (embedded or "").strip() != current:
            stale.append(embedding)
    return stale


def _stale_warning(stale: list[str]) -> str | None:
    if not stale:
        return None
    hints = {
        catalog.NAME: "name_embedding keeps the name it was created with: only a delete and "
        "recreate of the entity refreshes it (K-AST-019; no tool of this version deletes one "
        "entity yet); search by words sees the new name",
        catalog.SUMMARY: "summary_embedding reflects an earlier summary (run "
        "knowledge_backfill_summary_embeddings to refresh it)",
        catalog.FACT: "fact_embedding reflects the fact the edge was created with (embeddings "
        "are write-once: no tool re-embeds a fact; search by words sees the new one)",
    }
    return "; ".join(hints[embedding] for embedding in stale)


def assert_relationship(ctx: WriteContext, command: AssertRelationship) -> AssertRelationshipResult:
    source = state.entity_by_name(ctx.conn, command.group_id, command.source_name)
    target = state.entity_by_name(ctx.conn, command.group_id, command.target_name)
    active = None
    if source is not None and target is not None:
        active = state.active_edge(
            ctx.conn, command.group_id, source.uuid, command.predicate, target.uuid
        )
    current = None if active is None else state.edge_state(ctx.conn, active)
    decision = deciders.decide_assert_relationship(
        command, deciders.RelationshipLookup(source, target, active, current)
    )
    stale: list[str] = []
    if not decision.created:
        stale = _stale(ctx, decision.edge_uuid, {catalog.FACT: command.stored_fact.strip()})
    ctx.append(command.group_id, decision.events)
    return AssertRelationshipResult(
        edge_uuid=decision.edge_uuid,
        created=decision.created,
        embedding_warning=_stale_warning(stale),
        embedding_stale=stale,
    )


def add_episode(ctx: WriteContext, command: AddEpisode) -> AddEpisodeResult:
    ctx.append(command.group_id, deciders.decide_add_episode(command))
    return AddEpisodeResult(episode_uuid=command.new_uuid)


def process_chunk(ctx: WriteContext, command: ProcessChunk) -> deciders.ChunkDecision:
    """Resolve the extraction against the group (entities by name), decide, append."""
    group = command.episode.group_id

    def stored(name: str) -> str | None:
        found = state.entity_by_name(ctx.conn, group, name)
        if found is not None:
            return found.uuid
        similar = command.similar.get(rules.name_key(name))
        if similar is None:
            return None
        still = state.entity_by_uuid(ctx.conn, similar.entity_uuid)  # not deleted since
        if still is None or still.group_id != group or still.merged_into is not None:
            return None
        return still.uuid

    resolved = resolve(command.extraction, stored)
    decision = deciders.decide_process_chunk(
        command, resolved, lambda s, p, t: state.active_edge(ctx.conn, group, s, p, t)
    )
    ctx.append(group, decision.events)
    return decision


def delete_episodes(ctx: WriteContext, command: DeleteEpisodes) -> list[str]:
    """Delete the matching episodes of the listed groups; their uuids, oldest first."""
    found = state.episodes_matching(
        ctx.conn, command.group_ids, source_file=command.source_file, chunk_id=command.chunk_id
    )
    for group, events in deciders.decide_delete_episodes(command, found):
        ctx.append(group, events)
    return [uuid for _, uuid in found]


def delete_episode(ctx: WriteContext, command: DeleteEpisode) -> DeleteEpisodeResult:
    """Delete in the episode's own group; an unknown uuid is a no-op success (P-120)."""
    decision = deciders.decide_delete_episode(
        command, state.episode_group(ctx.conn, command.episode_uuid)
    )
    if decision is not None:
        ctx.append(*decision)
    return DeleteEpisodeResult(status="deleted")


def purge_group(ctx: WriteContext, command: PurgeGroup) -> state.GroupCounts:
    """Append the purge to the group's own stream; an empty group appends nothing. A session's
    memory rows count too: the purge empties them (ADR 0026)."""
    counts = state.group_counts(ctx.conn, command.group_id)
    memory = memory_state.counts(ctx.conn, command.group_id)
    rows = counts["entities"] + counts["episodes"] + counts["edges"] + memory["node_count"]
    ctx.append(command.group_id, deciders.decide_purge_group(command, rows))
    return counts
