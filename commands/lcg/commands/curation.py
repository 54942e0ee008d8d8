"""Curation handlers: merges of entities (and, in corrections, the other repairs): load the
state the curation deciders need, decide, append inside the writer's batch."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from lcg.commands.writer import WriteContext
from lcg.domain import curation
from lcg.domain.commands import MergeEntities
from lcg.domain.curation import MergeDecision, MergeLookup, MergePlan, SkippedAlias
from lcg.domain.deciders import EntityState
from lcg.projections.graph import state


class MergeResult(TypedDict):
    """knowledge_merge_entities' answer (P-124); counts are what was written (0 on a dry
    run, whose `plan` says what would be)."""

    success: bool
    canonical_uuid: str
    merged_count: int
    skipped: list[SkippedAlias]
    edges_rewritten: int
    edges_deduplicated: int
    foreign_edges_skipped: int
    errors: list[str]
    plan: NotRequired[MergePlan]


def load_merge(ctx: WriteContext, command: MergeEntities) -> MergeLookup:
    """What resolve_merge needs: the canonical, the aliases by uuid and by name."""
    group = command.group_id
    if command.canonical_uuid is not None:
        canonical = state.entity_by_uuid(ctx.conn, command.canonical_uuid)
    else:
        named = state.entities_named(ctx.conn, group, command.canonical_name or "")
        live = [e for e in named if e.merged_into is None]
        candidates = live or named
        canonical = candidates[0] if candidates else None
    same_name: tuple[EntityState, ...] = ()
    if command.merge_all_by_name and canonical is not None:
        same_name = tuple(
            e
            for e in state.entities_named(ctx.conn, group, canonical.name)
            if e.merged_into is None
        )
    return MergeLookup(
        canonical=canonical,
        by_uuid=tuple((u, state.entity_by_uuid(ctx.conn, u)) for u in command.alias_uuids),
        by_name=tuple(
            (name, tuple(state.entities_named(ctx.conn, group, name)))
            for name in command.alias_names
        ),
        same_name=same_name,
    )


def decide_merge(
    ctx: WriteContext, command: MergeEntities
) -> tuple[MergeDecision, curation.MergeTargets]:
    """Load and decide, appending nothing."""
    targets = curation.resolve_merge(command, load_merge(ctx, command))
    touched = [targets.canonical.uuid, *(alias.uuid for alias in targets.aliases)]
    edges = state.edges_touching(ctx.conn, touched) if targets.aliases else []
    return curation.decide_merge(command, targets, edges), targets


def merge_entities(ctx: WriteContext, command: MergeEntities) -> MergeResult:
    """Decide the merge from the batch's state and append it (unless dry_run)."""
    decision, targets = decide_merge(ctx, command)
    written = not command.dry_run
    if written:
        ctx.append(command.group_id, decision.events)
    result = MergeResult(
        success=True,
        canonical_uuid=targets.canonical.uuid,
        merged_count=len(decision.merged) if written else 0,
        skipped=list(targets.skipped),
        edges_rewritten=len(decision.rewritten) if written else 0,
        edges_deduplicated=len(decision.collapsed) if written else 0,
        foreign_edges_skipped=len(decision.foreign) if written else 0,
        errors=[],
    )
    if command.dry_run:
        result["plan"] = decision.plan
    return result
