"""Status, recovery and maintenance: WAL rebuilds, marks and dumps, purges, indexes, close."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, TypedDict

from pydantic import Field

from lcg.commands import admin, checkpoint, indexing, rebuild_jobs, recovery, wal_admin
from lcg.domain import rules
from lcg.domain.commands import BackfillSummaries
from lcg.domain.errors import Conflict
from lcg.domain.ids import DEFAULT_GROUP, GroupId
from lcg.interfaces import ontology_file
from lcg.interfaces.app import App
from lcg.interfaces.dump_target import dump_target
from lcg.interfaces.params import GroupIdField, NoParams, Params
from lcg.queries import status as status_query


class DeleteByGroupParams(Params):
    group_ids: list[GroupIdField] = Field(
        min_length=1, max_length=rules.MAX_GROUP_IDS, description="The groups to purge."
    )
    confirm: bool = Field(False, description="Must be true to purge (or pass dry_run).")
    dry_run: bool = Field(False, description="Count what would be deleted; delete nothing.")


class ClearAllParams(Params):
    confirm: bool = Field(description="Must be true: the whole graph is dropped.")
    preserve_wal: bool = Field(False, description="Keep the WAL (else it is erased too).")


class RebuildFromWalParams(Params):
    group_id: GroupIdField = DEFAULT_GROUP
    from_seq: int = Field(0, ge=0, description="0: full rebuild; N > 0: resume from seq N.")
    to_seq: int | None = Field(
        None,
        ge=0,
        description="Inclusive last seq; given, the group is pinned there. Past the head: "
        "replayed to the head, with a warning. Below the applied seq of a resume (from_seq > "
        "0): nothing is replayed or changed, with a warning (a replay never undoes applied "
        "events).",
    )
    dry_run: bool = Field(False, description="Count what would be replayed; change nothing.")
    force_clear: bool = Field(
        False, description="Replace a non-empty group's rows (a full rebuild needs it)."
    )
    background: bool = Field(
        False,
        description="Answer {success, job_id, status: running} once the rebuild's checks have "
        "passed and replay on a thread; poll knowledge_rebuild_status. A second background "
        "rebuild while one runs answers that job's id. Ignored with dry_run.",
    )


class RebuildStatusParams(Params):
    job_id: str = Field(
        min_length=1, max_length=100, description="The job_id a knowledge_rebuild_from_wal gave."
    )


MarkNameField = Annotated[
    str,
    Field(
        min_length=1,
        max_length=rules.MAX_MARK_NAME,
        pattern=rules.MARK_NAME_PATTERN,
        description="The mark's name: 1-200 letters, digits, _ or -, unique in its group.",
    ),
]


class WalMarkCreateParams(Params):
    name: MarkNameField
    group_id: GroupIdField = DEFAULT_GROUP


class WalMarkListParams(Params):
    group_id: GroupIdField = DEFAULT_GROUP


class WalMarkDeleteParams(Params):
    name: MarkNameField
    group_id: GroupIdField = DEFAULT_GROUP


class DumpWalParams(Params):
    target_dir: str | None = Field(
        None,
        min_length=1,
        max_length=4_096,
        description="Directory to write into; it must not exist or be empty, and must be "
        "inside the workspace (a relative path is taken from the workspace directory) or "
        "inside the directory the setting [wal] dump_dir names. Default: "
        "<workspace>/.lcg/wal-compacted.",
    )
    group_ids: list[GroupIdField] | None = Field(
        None,
        min_length=1,
        max_length=rules.MAX_GROUP_IDS,
        description="Groups to dump (memory sessions included). Omitted or null: every group.",
    )


class BackfillSummaryParams(Params):
    group_id: Annotated[
        GroupIdField,
        Field(description="Required: the one group (never database-wide or the default)."),
    ]
    dry_run: bool = Field(False, description="Count the candidates; embed nothing.")


class RecoverParams(Params):
    strategy: recovery.StrategyName = Field(
        description="drop_lbug_wal: set graph.sqlite's -wal/-shm aside and catch up from the "
        "WAL; rebuild_from_workspace_wal: set every projection file aside and rebuild all "
        "groups from the WAL; restore_from_backup: replace the workspace by the dump in "
        ".lcg/wal-compacted (events after it stay in the set-aside directory)."
    )


class CloseResult(TypedDict):
    status: Literal["closed"]


def status(app: App, _: NoParams) -> status_query.Status:
    """Counts, per-group WAL head and applied seq, hydration and pinned state."""
    reads, writes, upkeep = app.reads, app.writes, app.upkeep
    contract = reads.embedder.contract
    embedding = status_query.Embedding(kind=contract.kind, model=contract.model, dim=contract.dim)
    repaired = [*upkeep.repairs, *upkeep.cache_repairs()]
    if upkeep.read_only or upkeep.damaged is not None:
        derived = status_query.Derived(
            vector_count=None,
            vector_pending=0,
            last_index_time=None,
            index_error=None,
            repaired=repaired,
            damaged_files=upkeep.damaged_files(),
        )
        failure = None
    else:
        pending, follow_failure = upkeep.vector_follow_state
        derived = status_query.Derived(
            vector_count=reads.vectors.count(),
            vector_pending=pending,
            last_index_time=_iso(upkeep.last_index_time),
            index_error=writes.writer.listener_failure or follow_failure,
            repaired=repaired,
            damaged_files=[],
        )
        failure = upkeep.runner.failure
    extractor = status_query.ExtractorInfo(name=writes.extractor.name, model=writes.extractor.model)
    conn = reads.reader()
    ontology = ontology_file.status_block(reads.settings.state_dir, conn)
    return status_query.status(
        conn,
        reads.log,
        upkeep.runner.names,
        failure,
        embedding,
        derived,
        upkeep.faults(),
        extractor,
        ontology,
    )


def delete_by_group(app: App, q: DeleteByGroupParams) -> admin.DeleteByGroupResult:
    """Purge every entity, edge and episode of the groups (confirm: true, or dry_run)."""
    return admin.delete_by_group(
        app.writes.writer,
        [GroupId(g) for g in dict.fromkeys(q.group_ids)],
        confirm=q.confirm,
        dry_run=q.dry_run,
        now=app.now,
    )


def clear_all(app: App, q: ClearAllParams) -> admin.ClearAllResult:
    """Drop the whole graph (confirm: true); the WAL is erased unless preserve_wal."""
    return admin.clear_all(app.writes.writer, confirm=q.confirm, preserve_wal=q.preserve_wal)


def rebuild_from_wal(
    app: App, q: RebuildFromWalParams
) -> admin.RebuildResult | rebuild_jobs.Started:
    """Rebuild one group's projections from its WAL, from_seq <= seq <= to_seq. A full
    rebuild of a non-empty group needs force_clear; a bounded one pins the group. The result
    carries a job_id that knowledge_rebuild_status reads; background: true answers at once."""
    request = admin.RebuildRequest(
        group_id=GroupId(q.group_id),
        from_seq=q.from_seq,
        to_seq=q.to_seq,
        dry_run=q.dry_run,
        force_clear=q.force_clear,
    )
    writer, jobs = app.writes.writer, app.writes.rebuild_jobs
    if q.dry_run:
        return admin.rebuild_from_wal(writer, request, app.progress)
    if q.background:
        running = jobs.running_in_background()
        if running is not None:
            return rebuild_jobs.Started(success=True, job_id=running.job_id, status="running")
        job = jobs.start(q.group_id)
        return jobs.run_in_background(
            job,
            lambda started: admin.rebuild_from_wal(
                writer, request, jobs.progress(job, None), started
            ),
        )
    job = jobs.start(q.group_id)
    try:
        result = admin.rebuild_from_wal(writer, request, jobs.progress(job, app.progress))
    except BaseException as error:
        jobs.failed(job, error)
        raise
    jobs.completed(job, result)
    result["job_id"] = job.job_id
    return result


def rebuild_status(app: App, q: RebuildStatusParams) -> rebuild_jobs.RebuildStatus:
    """A rebuild job's record, in flight or done (P-104): status running | completed |
    failed, mutations_replayed, start_time, elapsed_seconds, error, and the rebuild's result
    once it completed; {"status": "not_found"} for an id this process never gave."""
    return app.writes.rebuild_jobs.status(q.job_id)


def wal_mark_create(app: App, q: WalMarkCreateParams) -> wal_admin.MarkCreated:
    """Name group_id's current applied seq without a snapshot: a restore point that
    knowledge_rebuild_from_wal {to_seq: seq, force_clear: true} returns the group to. Marks
    live in the WAL file and are not carried by knowledge_dump_wal."""
    return wal_admin.create_mark(app.writes.writer, GroupId(q.group_id), q.name, app.now())


def wal_mark_list(app: App, q: WalMarkListParams) -> wal_admin.MarkList:
    """List group_id's marks (only that group's), oldest first, each with its seq and
    whether a replay can still reach it (its generation's numbering, seq in the WAL)."""
    return wal_admin.list_marks(app.reads.log, GroupId(q.group_id))


def wal_mark_delete(app: App, q: WalMarkDeleteParams) -> wal_admin.MarkDeleted:
    """Delete group_id's mark `name` (a tombstone is kept); the name can be used again.
    An unknown or already deleted name is an error."""
    return wal_admin.delete_mark(app.writes.writer, GroupId(q.group_id), q.name, app.now())


def dump_wal(app: App, q: DumpWalParams) -> wal_admin.DumpResult:
    """Snapshot the graph into a fresh compacted WAL (wal.sqlite and dump.json) in
    target_dir: every group (or group_ids), seqs renumbered, no marks. `lcg restore DIR`
    makes a workspace of it that answers every read the same."""
    target = dump_target(app.reads.settings, q.target_dir, anywhere=app.operator)
    groups = None if q.group_ids is None else [GroupId(g) for g in q.group_ids]
    return wal_admin.dump_wal(app.writes.writer, groups, target, app.now(), app.progress)


def prepare_checkpoint(app: App, _: NoParams) -> checkpoint.CheckpointResult:
    """Make .lcg/ a consistent file-level backup: with writes held off, fold each SQLite
    database's -wal sidecar into its file and truncate it, and write the index files, so the
    main files alone hold the whole state until the next write. Nothing to do with marks."""
    reads = app.reads
    return checkpoint.prepare_checkpoint(
        reads.settings.files, app.writes.writer, reads.vectors, reads.text_scorer, app.upkeep.settle
    )


def _outside_a_service(method: str) -> Conflict:
    return Conflict(
        f"{method} closes and reopens the workspace, so it runs in the serving process (lcg "
        "serve or lcg serve --mcp-stdio, where it also answers while the workspace is "
        "degraded) or as `lcg recover` with no process holding the workspace",
        field="method",
        rule="recovery runs where the workspace can be closed",
    )


def recover(app: App, q: RecoverParams) -> recovery.RecoverResult:
    """Recover the workspace by one strategy (drop_lbug_wal, rebuild_from_workspace_wal,
    restore_from_backup): the serving process closes the workspace, sets the files the
    strategy replaces aside (never deleted), opens it again and answers {strategy, success,
    restart_required: false, set_aside, detail}; it answers in degraded mode too."""
    raise _outside_a_service("knowledge_recover")


def recover_full(app: App, _: NoParams) -> recovery.RecoverFullResult:
    """Full recovery: a no-op with recovery_needed false on a healthy workspace; otherwise
    every projection is set aside and rebuilt from the WAL, answering episodes_before,
    mutations_replayed, episodes_after and indexes_rebuilt. Answers in degraded mode too."""
    raise _outside_a_service("knowledge_recover_full")


def close(app: App, _: NoParams) -> CloseResult:
    """Close this process's workspace and stop serving: the socket service answers, then
    shuts down; a standalone MCP server exits. Returns {"status": "closed"}."""
    # P-016: the serving process (lcg.interfaces.service) stops after answering; an
    # in-process caller's workspace closes when its `with` block ends.
    return CloseResult(status="closed")


def backfill_summary_embeddings(app: App, q: BackfillSummaryParams) -> indexing.BackfillResult:
    """Re-embed every non-empty entity summary of group_id (required) so summaries are
    searchable by meaning; dry_run counts the candidates. A real run holds off other writes
    and knowledge reads until it finishes: they wait, then run."""
    command = BackfillSummaries(GroupId(q.group_id), app.now())
    return indexing.backfill_summary_embeddings(
        app.writes.writer,
        command,
        dry_run=q.dry_run,
        progress=app.progress,
        read_hold=app.writes.read_hold,
    )


def build_indices(app: App, _: NoParams) -> indexing.BuildIndicesResult:
    """Bring the vector and text indexes in line with the graph and write them to disk.
    Idempotent."""
    built = indexing.build_indices(app.writes.writer, app.reads.vectors.checkpoint)
    app.upkeep.last_index_time = app.now()  # P-102: what knowledge_status reports
    return built


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()
