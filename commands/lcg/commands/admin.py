"""Administrative writes: rebuild a group from its WAL, purge groups, clear the whole graph."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import NotRequired, TypedDict

from lcg.commands import cross_group, handlers
from lcg.commands.writer import WriteContext, Writer
from lcg.domain.commands import PurgeGroup
from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.ids import GroupId
from lcg.projections.graph import state
from lcg.projections.runner import Progress


@dataclass(frozen=True, slots=True)
class RebuildRequest:
    """knowledge_rebuild_from_wal / `lcg replay` (P-137)."""

    group_id: GroupId
    from_seq: int = 0
    to_seq: int | None = None
    dry_run: bool = False
    force_clear: bool = False


class RebuildResult(TypedDict):
    success: bool
    group_id: str
    from_seq: int
    to_seq: int | None
    mutations_replayed: int
    wal_files_processed: int
    indexes_created: int
    failed_lines: int
    unparseable_lines: int
    last_committed_seq: int
    transactions_committed: int
    transactions_rolled_back: int
    pinned_to: int | None
    dry_run: NotRequired[bool]
    job_id: NotRequired[str]  # the rebuild job's id, for knowledge_rebuild_status
    # what the call did not do as asked (a to_seq past the head, a resume that replays nothing)
    warnings: NotRequired[list[str]]


def check_rebuild_bounds(request: RebuildRequest) -> None:
    """Refuse impossible bounds before the WAL is read or anything is touched (K-WAL-030).

    Each bound alone (an integer >= 0) is the parameter model's rule; this is the rule
    between them.
    """
    if request.to_seq is not None and request.to_seq < request.from_seq:
        raise InvalidParams(
            "to_seq",
            f"must not be less than from_seq (to_seq {request.to_seq} < from_seq "
            f"{request.from_seq})",
            "knowledge_rebuild_from_wal rejects this before reading the WAL",
        )


def group_is_empty(writer: Writer, group_id: GroupId) -> bool:
    counts = state.group_counts(writer.runner.conn, group_id)
    return counts["entities"] + counts["episodes"] + counts["edges"] == 0


def rebuild_from_wal(
    writer: Writer,
    request: RebuildRequest,
    progress: Progress | None = None,
    started: Callable[[], None] | None = None,
) -> RebuildResult:
    """Replay one group's stream into its projections (K-WAL-012..035). `started` is called
    once every check has passed, just before the replay (a background job answers then)."""
    check_rebuild_bounds(request)
    with writer.exclusive():
        head = writer.log.head(request.group_id)
        if head == 0:
            raise NotFound(
                f"group_id: the WAL holds no events for group {request.group_id!r}",
                field="group_id",
                rule="must name a group with a WAL stream",
            )
        full = request.from_seq == 0
        if full and not group_is_empty(writer, request.group_id):
            # Issue 10: advice names what works as written. Deleting the group first (the
            # old dry-run advice) appends a purge that every later replay re-applies.
            replay = f"lcg replay --group {request.group_id}" + (
                "" if request.to_seq is None else f" --to-seq {request.to_seq}"
            )
            if request.dry_run:
                raise Conflict(
                    f"group_id: group {request.group_id!r} is not empty; a dry run never "
                    "mutates, so it cannot clear it (force_clear is ignored in a dry run). "
                    f"`lcg log --group {request.group_id}` lists the events a replay applies; "
                    f"`{replay} --force-clear` (force_clear: true, without dry_run) replaces "
                    "its rows with the WAL's replay",
                    field="group_id",
                    rule="dry run of a full rebuild needs an empty group",
                )
            if not request.force_clear:
                raise Conflict(
                    f"force_clear: group {request.group_id!r} is not empty; a full rebuild "
                    "(from_seq 0) refuses to run over existing data. Pass force_clear: true "
                    f"(`{replay} --force-clear`) to replace its rows with the WAL's replay "
                    "(the WAL itself is untouched)",
                    field="force_clear",
                    rule="must be true to rebuild a non-empty group",
                )
        applied = writer.runner.position(request.group_id).position
        if not full and request.from_seq - 1 > applied:
            raise InvalidParams(
                "from_seq",
                f"must be at most {applied + 1}: group {request.group_id!r} is applied to seq "
                f"{applied}, and resuming at {request.from_seq} would skip seqs "
                f"{applied + 1}..{request.from_seq - 1}",
            )
        warnings = _bound_warnings(request, head, applied)
        if not full and request.to_seq is not None and request.to_seq < applied:
            # K-WAL-035: to_seq bounds where a replay ends and never undoes applied events;
            # a pin below them would have the next rebuild (recovery) drop them
            pinned = writer.runner.position(request.group_id).pinned_to
            return _rebuild_result(
                request, 0, applied, pinned, dry_run=request.dry_run, warnings=warnings
            )
        upto = head if request.to_seq is None else min(request.to_seq, head)
        if request.dry_run:
            start = max(0 if full else applied, request.from_seq - 1)
            return _rebuild_result(
                request, max(0, upto - start), upto, None, dry_run=True, warnings=warnings
            )
        if started is not None:
            started()
        replayed = writer.runner.rebuild(
            request.group_id,
            from_seq=request.from_seq,
            to_seq=None if request.to_seq is None else upto,
            progress=progress,
        )
        writer.notify_rebuilt([request.group_id])
        pinned = writer.runner.position(request.group_id).pinned_to
        return _rebuild_result(request, replayed, upto, pinned, dry_run=False, warnings=warnings)


def _bound_warnings(request: RebuildRequest, head: int, applied: int) -> list[str]:
    """What the call will not do as its bounds read: a to_seq past the head is clamped to it
    (K-WAL-027 accepts any to_seq >= from_seq: the entries up to it are all there are); a
    resume whose to_seq is below the applied seq replays nothing and changes nothing."""
    group, to_seq = request.group_id, request.to_seq
    if to_seq is None:
        return []
    if request.from_seq > 0 and to_seq < applied:
        return [
            f"to_seq: group {group!r} is applied to seq {applied}, past to_seq {to_seq}: "
            "nothing was replayed and nothing changed, its pin neither (to_seq bounds where "
            "a replay ends; it never undoes applied events). To show the group as it was at "
            f"seq {to_seq}, rebuild it in full: `lcg replay --group {group} --to-seq {to_seq} "
            "--force-clear` (from_seq 0, force_clear: true)"
        ]
    if to_seq > head:
        return [
            f"to_seq: {to_seq} is past the last seq of group {group!r} ({head}): replayed to "
            f"seq {head}, where the group is pinned like any bounded replay (writes refused "
            f"until `lcg replay --group {group}`, or a rebuild without to_seq, releases it)"
        ]
    return []


def _rebuild_result(
    request: RebuildRequest,
    replayed: int,
    last: int,
    pinned: int | None,
    *,
    dry_run: bool,
    warnings: list[str],
) -> RebuildResult:
    result = RebuildResult(
        success=True,
        group_id=request.group_id,
        from_seq=request.from_seq,
        to_seq=request.to_seq,
        mutations_replayed=replayed,
        wal_files_processed=1,
        indexes_created=0,
        failed_lines=0,
        unparseable_lines=0,
        last_committed_seq=last,
        transactions_committed=0 if dry_run else 1,
        transactions_rolled_back=0,
        pinned_to=pinned,
    )
    if dry_run:
        result["dry_run"] = True
    if warnings:
        result["warnings"] = warnings
    return result


class UnboundImpact(TypedDict):
    group_id: str
    pointer_count: int


class DeleteByGroupResult(TypedDict):
    success: bool
    dry_run: bool
    groups: list[state.GroupCounts]
    unbound_impacts: list[UnboundImpact]
    applied_seq_reset: bool


def delete_by_group(
    writer: Writer,
    group_ids: Sequence[GroupId],
    *,
    confirm: bool,
    dry_run: bool,
    now: Callable[[], datetime],
) -> DeleteByGroupResult:
    """Purge each group with an event in its own stream (P-122); dry_run only counts."""
    if not confirm and not dry_run:
        raise InvalidParams(
            "confirm", "Must set 'confirm' to true to purge group data (or 'dry_run' to preview)"
        )
    impacts: dict[GroupId, int] = {}
    if dry_run:
        with writer.exclusive():
            counts = [state.group_counts(writer.runner.conn, g) for g in group_ids]
            for group in group_ids:
                found = cross_group.purge_impacts(writer.runner.conn, group, now())
                for edge_group, count in found.items():
                    impacts[edge_group] = impacts.get(edge_group, 0) + count
    else:
        purges = [PurgeGroup(group, now()) for group in group_ids]
        outcomes = writer.execute_many(
            [partial(_purge_and_unbind, command=command) for command in purges]
        )
        counts = []
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                raise outcome
            counts.append(outcome[0])
            for edge_group, count in outcome[1].items():
                impacts[edge_group] = impacts.get(edge_group, 0) + count
    return DeleteByGroupResult(
        success=True,
        dry_run=dry_run,
        groups=counts,
        unbound_impacts=[
            UnboundImpact(group_id=group, pointer_count=count)
            for group, count in sorted(impacts.items())
        ],
        applied_seq_reset=False,
    )


def _purge_and_unbind(
    ctx: WriteContext, command: PurgeGroup
) -> tuple[state.GroupCounts, dict[GroupId, int]]:
    """The group's purge, then its foreign pointers left unbound (P-122, ADR 0041)."""
    return handlers.purge_group(ctx, command), cross_group.unbind_purged(ctx, command)


class ClearAllResult(TypedDict):
    success: bool
    message: str


def clear_all(writer: Writer, *, confirm: bool, preserve_wal: bool) -> ClearAllResult:
    """Drop the whole graph; without preserve_wal the WAL is erased too (P-123)."""
    if confirm is not True:
        raise InvalidParams("confirm", "must be true to clear every group's data")
    with writer.exclusive():
        if preserve_wal:
            writer.runner.pin_all_at_zero()
            message = (
                "graph cleared; the WAL is kept and every group is held empty until "
                "`lcg replay --group G` (knowledge_rebuild_from_wal) restores it"
            )
        else:
            writer.log.truncate_all()
            writer.runner.reset_all()
            message = "graph and WAL cleared"
        writer.notify_rebuilt(None)
    return ClearAllResult(success=True, message=message)
