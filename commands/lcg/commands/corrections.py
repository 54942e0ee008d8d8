"""Applying the corrections file (P-125) in one writer batch: each correction is loaded and
decided against the state the earlier ones left, its events appended; a failure anywhere, a
dry run or a validation rolls the whole batch back, so the file applies all or nothing."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, TypedDict

from lcg.commands import curation as merges
from lcg.commands.writer import WriteContext
from lcg.domain import curation
from lcg.domain.commands import MergeEntities
from lcg.domain.corrections import Correction, EdgeRef, EntityRef, Issue
from lcg.domain.deciders import EntityState
from lcg.domain.errors import Conflict, DomainError, NotFound
from lcg.domain.events import CorrectionsApplied, DomainEvent, RelationshipInvalidated
from lcg.domain.ids import EdgeUuid, EntityUuid, GroupId
from lcg.projections.graph import state

Status = Literal["applied", "would_apply", "unchanged", "skipped", "error", "rolled_back"]


class CorrectionDetail(TypedDict):
    """What became of one correction: applied (or would_apply on a dry run or a validation),
    unchanged (it changes nothing; still recorded as applied), skipped (applied before),
    error, or rolled_back (it was fine, but another one's error means nothing was written)."""

    id: str
    action: str
    group_id: str
    status: Status
    message: str


@dataclass
class CorrectionsReport:
    details: list[CorrectionDetail] = field(default_factory=list)
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)

    def count(self, *statuses: Status) -> int:
        return sum(1 for detail in self.details if detail["status"] in statuses)


class RolledBack(Exception):
    """Raised out of the handler after appending, so the writer rolls the batch back (a
    failed correction, a dry run, a validation); carries what the run found."""

    def __init__(self, report: CorrectionsReport) -> None:
        super().__init__("corrections rolled back")
        self.report = report


def run_corrections(
    ctx: WriteContext, corrections: Sequence[Correction], now: datetime, *, write: bool
) -> CorrectionsReport:
    """Decide and append every correction not applied before; with `write`, record them
    (CorrectionsApplied per group) unless one failed. Raises RolledBack when events were
    staged but must not be kept."""
    applied = state.applied_corrections(ctx.conn)
    report = CorrectionsReport()
    recorded: dict[GroupId, list[str]] = {}
    for correction in corrections:
        detail = CorrectionDetail(
            id=correction.id,
            action=correction.action,
            group_id=correction.group_id,
            status="skipped",
            message="applied before",
        )
        report.details.append(detail)
        if (correction.group_id, correction.id) in applied:
            continue
        try:
            events = _decide(ctx, correction, now)
            ctx.append(correction.group_id, events)
        except DomainError as error:
            detail["status"], detail["message"] = "error", error.message
            where = error.field or ""
            text = error.message.removeprefix(f"{where}: ") if where else error.message
            report.errors.append(Issue(correction=correction.id, field=where, message=text))
            continue
        if events:
            detail["status"] = "applied" if write else "would_apply"
            detail["message"] = f"{len(events)} event(s)"
        else:
            detail["status"], detail["message"] = "unchanged", "the graph already says this"
            report.warnings.append(
                Issue(correction=correction.id, field="action", message="changes nothing")
            )
        recorded.setdefault(correction.group_id, []).append(correction.id)
    if write and not report.errors:
        for group, ids in recorded.items():
            ctx.append(group, (CorrectionsApplied(now, tuple(ids)),))
        return report
    if write:  # one failed: what the others decided goes with the batch
        for detail in report.details:
            if detail["status"] in ("applied", "unchanged"):
                detail["status"] = "rolled_back"
                detail["message"] += "; rolled back: another correction failed"
    if ctx.recorded:
        raise RolledBack(report)
    return report


def _decide(ctx: WriteContext, correction: Correction, now: datetime) -> tuple[DomainEvent, ...]:
    if correction.action == "merge":
        return _merge(ctx, correction, now)
    if correction.action == "delete_edge":
        if correction.edge is None:
            raise AssertionError  # parse sets it for this action
        edge = _edge(ctx, correction.group_id, correction.edge)
        return (RelationshipInvalidated(now, edge, f"correction {correction.id}"),)
    if correction.entity is None:
        raise AssertionError  # parse sets it for these actions
    entity = _entity(ctx, correction.group_id, correction.entity, "entity")
    clash = None
    if correction.name is not None:
        clash = state.entity_by_name(ctx.conn, correction.group_id, correction.name)
    return curation.decide_revision(
        now,
        entity,
        name=correction.name,
        labels=correction.labels or None,
        summary=correction.summary,
        clash=clash,
    )


_ALIAS_FIELD = re.compile(r"^alias_(uuids|names)\[(\d+)\]$")


def _merge(ctx: WriteContext, correction: Correction, now: datetime) -> tuple[DomainEvent, ...]:
    """The merge tool's own load and decision, its field names mapped to the file's."""
    canonical = correction.entity or EntityRef()
    by_uuid = [i for i, ref in enumerate(correction.aliases) if ref.uuid is not None]
    by_name = [i for i, ref in enumerate(correction.aliases) if ref.uuid is None]
    command = MergeEntities(
        group_id=correction.group_id,
        canonical_uuid=None if canonical.uuid is None else EntityUuid(canonical.uuid),
        canonical_name=canonical.name,
        alias_uuids=tuple(EntityUuid(correction.aliases[i].uuid or "") for i in by_uuid),
        alias_names=tuple(correction.aliases[i].name or "" for i in by_name),
        merge_all_by_name=False,
        dry_run=False,
        now=now,
    )
    try:
        decision, _ = merges.decide_merge(ctx, command)
    except DomainError as error:
        found = _ALIAS_FIELD.match(error.field or "")
        if found is not None:
            positions = by_uuid if found.group(1) == "uuids" else by_name
            error.field = f"aliases[{positions[int(found.group(2))]}]"
        elif error.field in ("canonical_uuid", "canonical_name"):
            error.field = "canonical"
        error.message = f"{error.field}: {error.message.split(': ', 1)[-1]}"
        raise
    return decision.events


def _entity(ctx: WriteContext, group: GroupId, ref: EntityRef, at: str) -> EntityState:
    if ref.uuid is not None:
        found = state.entity_by_uuid(ctx.conn, ref.uuid)
        if found is not None and found.group_id == group and found.merged_into is not None:
            raise Conflict(
                f"{at}: entity {ref.uuid} was merged into {found.merged_into}",
                field=at,
                rule="must not name a merged entity",
            )
    else:
        found = state.entity_by_name(ctx.conn, group, ref.name or "")
    if found is None or found.group_id != group:
        raise NotFound(
            f"{at}: no entity {ref} in group {group!r}",
            field=at,
            rule="must name an entity of group_id",
        )
    return found


def _edge(ctx: WriteContext, group: GroupId, ref: EdgeRef) -> EdgeUuid:
    if ref.uuid is not None:
        found = state.active_edge_by_uuid(ctx.conn, ref.uuid)
        if found is None or found.group_id != group:
            raise NotFound(
                f"edge: no active edge {ref.uuid} in group {group!r}",
                field="edge",
                rule="must name an active edge of group_id",
            )
        return found.uuid
    source = _entity(ctx, group, ref.source or EntityRef(), "edge.source")
    target = _entity(ctx, group, ref.target or EntityRef(), "edge.target")
    edge = state.active_edge(ctx.conn, group, source.uuid, ref.predicate or "", target.uuid)
    if edge is None:
        raise NotFound(
            f"edge: no active edge {source.name!r} {ref.predicate} {target.name!r} in group"
            f" {group!r}",
            field="edge",
            rule="must name an active edge of group_id",
        )
    return edge
