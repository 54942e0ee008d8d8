"""WAL administration: marks (named positions of a group's stream) and dumps (ADR 0032)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from lcg.commands.writer import Writer
from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.ids import GroupId
from lcg.projections.faults import DumpFailed, StorageFailure, is_storage_error
from lcg.projections.graph import state
from lcg.projections.runner import Progress
from lcg.projections.wal import dump
from lcg.projections.wal.marks import Mark, MarkExists
from lcg.projections.wal.port import LogStore


class MarkCreated(TypedDict):
    success: bool
    name: str
    group_id: str
    seq: int
    generation: int
    created_at: str


class Checkpoint(TypedDict):
    """One mark as knowledge_wal_mark_list shows it (P-136 calls marks checkpoints)."""

    name: str
    seq: int
    generation: int
    reachable: bool
    wal_min_seq: int | None
    wal_max_seq: int | None
    created_at: str


class MarkList(TypedDict):
    group_id: str
    generation: int
    checkpoints: list[Checkpoint]


class MarkDeleted(TypedDict):
    success: bool
    name: str
    group_id: str


def create_mark(writer: Writer, group_id: GroupId, name: str, now: datetime) -> MarkCreated:
    """Name the group's applied seq (K-WAL-006, P-135): what the graph shows now, which a
    bounded replay to it restores (K-REC-005). 0 names the empty group, before seq 1."""
    with writer.exclusive():  # the position does not move while it is read and recorded
        seq = writer.runner.position(group_id).position
        try:
            mark = writer.log.create_mark(group_id, name, seq, now)
        except MarkExists:
            raise Conflict(
                f"name: group {group_id!r} already has a mark named {name!r}; delete it first "
                "(knowledge_wal_mark_delete) or choose another name",
                field="name",
                rule="must not name an active mark of the group",
            ) from None
    return MarkCreated(
        success=True,
        name=mark.name,
        group_id=mark.group_id,
        seq=mark.seq,
        generation=mark.generation,
        created_at=mark.created_at,
    )


def list_marks(log: LogStore, group_id: GroupId) -> MarkList:
    """The group's active marks, oldest first, and whether a replay can still reach each
    (K-WAL-010: this group's only)."""
    generation = log.generation()
    bounds = log.bounds(group_id)
    low, high = (None, None) if bounds is None else bounds
    return MarkList(
        group_id=group_id,
        generation=generation,
        checkpoints=[_checkpoint(mark, generation, low, high) for mark in log.marks(group_id)],
    )


def _checkpoint(mark: Mark, generation: int, low: int | None, high: int | None) -> Checkpoint:
    # A stream never loses its prefix here, so a mark of this numbering is reachable while its
    # seq is in the stream (0, before seq 1, always is).
    reachable = mark.generation == generation and (mark.seq == 0 or mark.seq <= (high or 0))
    return Checkpoint(
        name=mark.name,
        seq=mark.seq,
        generation=mark.generation,
        reachable=reachable,
        wal_min_seq=low,
        wal_max_seq=high,
        created_at=mark.created_at,
    )


def delete_mark(writer: Writer, group_id: GroupId, name: str, now: datetime) -> MarkDeleted:
    """Tombstone the mark; the name is free again (P-136). An unknown name is refused."""
    with writer.exclusive():  # a storage failure shows in health, as a write's does
        return delete_mark_in(writer.log, group_id, name, now)


def delete_mark_in(log: LogStore, group_id: GroupId, name: str, now: datetime) -> MarkDeleted:
    """delete_mark on the WAL file itself: what a degraded service, which has no writer,
    answers with (P-003; marks live in the WAL, ADR 0032)."""
    deleted = log.delete_mark(group_id, name, now)
    if deleted is None:
        names = ", ".join(mark.name for mark in log.marks(group_id)) or "none"
        raise NotFound(
            f"name: group {group_id!r} has no mark named {name!r} (its marks: {names})",
            field="name",
            rule="must name an active mark of the group",
        )
    return MarkDeleted(success=True, name=name, group_id=group_id)


class DumpedGroup(TypedDict):
    group_id: str
    events: int
    source_from_seq: int
    source_to_seq: int


class DumpResult(TypedDict):
    success: bool
    target_dir: str
    nodes_dumped: int
    edges_dumped: int
    episodes_dumped: int
    events_dumped: int
    files_written: int
    groups: list[DumpedGroup]


def dump_wal(
    writer: Writer,
    group_ids: Sequence[GroupId] | None,
    target: Path,
    now: datetime,
    progress: Progress | None = None,
) -> DumpResult:
    """Write the graph of `group_ids` (None: every group) as a fresh compacted WAL into the
    empty directory `target` (K-WAL-003..005, P-133). Holds the writer throughout; a failed
    dump leaves no partial output."""
    with writer.exclusive():
        known = writer.log.groups()
        groups = known if group_ids is None else _known(group_ids, known)
        try:
            created = dump.prepare_target(target)
        except (FileExistsError, NotADirectoryError) as error:
            raise InvalidParams(
                "target_dir", "must name a directory that does not exist or is empty", str(error)
            ) from None
        except OSError as error:  # read-only, full, a name too long: the disk's answer
            raise DumpFailed(target, "create the dump directory", error) from None
        try:
            plans = [
                dump.plan_group(writer.log, g, writer.runner.position(g).position) for g in groups
            ]
            manifest = dump.write_dump(writer.log, plans, target, now, progress)
        except BaseException as error:
            dump.remove_partial(target, created=created)
            if _of_the_target(error, target):  # the workspace's own failures stay its own
                raise DumpFailed(target, "write the dump into", error) from error
            raise
        counts = [state.group_counts(writer.runner.conn, g) for g in groups]
    return DumpResult(
        success=True,
        target_dir=str(target),
        nodes_dumped=sum(c["entities"] for c in counts),
        edges_dumped=sum(c["edges"] for c in counts),
        episodes_dumped=sum(c["episodes"] for c in counts),
        events_dumped=int(manifest["events"]),
        files_written=2,
        groups=[
            DumpedGroup(
                group_id=plan.group_id,
                events=plan.count,
                source_from_seq=plan.after + 1,
                source_to_seq=plan.upto,
            )
            for plan in plans
        ],
    )


def _of_the_target(error: BaseException, target: Path) -> bool:
    """An OS or SQLite error, or a StorageFailure of a file in the dump's directory."""
    if isinstance(error, StorageFailure):
        return isinstance(error.path, Path) and error.path.is_relative_to(target)
    return is_storage_error(error)


def _known(group_ids: Sequence[GroupId], known: Sequence[GroupId]) -> list[GroupId]:
    missing = [g for g in group_ids if g not in known]
    if missing:
        names = ", ".join(known) or "none"
        raise NotFound(
            f"group_ids: the WAL holds no stream for {', '.join(map(repr, missing))} "
            f"(groups: {names})",
            field="group_ids",
            rule="must name groups of the workspace",
        )
    return list(dict.fromkeys(group_ids))
