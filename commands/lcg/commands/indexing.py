"""Search maintenance: backfill summary embeddings (K-SEM, P-130) and build indices (P-138)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypedDict

from lcg.commands.writer import WriteContext, Writer
from lcg.domain.errors import InvalidParams
from lcg.domain.events import SummaryEmbedded
from lcg.domain.ids import EntityUuid, GroupId
from lcg.projections.runner import Progress

BATCH = 200


class BackfillResult(TypedDict):
    group_id: str
    total_entities: int
    backfilled: int
    dry_run: bool


def backfill_summary_embeddings(
    writer: Writer,
    group_id: str | None,
    *,
    dry_run: bool,
    now: Callable[[], datetime],
    progress: Progress | None = None,
) -> BackfillResult:
    """Re-embed every non-blank summary of one group; each is a SummaryEmbedded event."""
    if not group_id:
        raise InvalidParams(
            "group_id",
            "is required and must be a non-empty string (no "
            "database-wide or default-group backfill)",
        )
    group = GroupId(group_id)
    with writer.exclusive():
        conn = writer.runner.conn
        total = int(
            conn.execute("SELECT COUNT(*) FROM entities WHERE group_id=?", (group,)).fetchone()[0]
        )
        candidates = [
            (EntityUuid(row[0]), str(row[1]))
            for row in conn.execute(
                "SELECT uuid, summary FROM entities WHERE group_id=? AND trim(summary) != ''"
                " ORDER BY seq",
                (group,),
            )
        ]
    if dry_run:
        return BackfillResult(
            group_id=group, total_entities=total, backfilled=len(candidates), dry_run=True
        )
    done = 0
    for start in range(0, len(candidates), BATCH):
        chunk = candidates[start : start + BATCH]
        events = tuple(SummaryEmbedded(now(), uuid, summary) for uuid, summary in chunk)

        def append(ctx: WriteContext, events: tuple[SummaryEmbedded, ...] = events) -> None:
            ctx.append(group, events)

        writer.execute(append)
        done += len(chunk)
        if progress is not None:
            progress(done, len(candidates))
    return BackfillResult(group_id=group, total_entities=total, backfilled=done, dry_run=False)


class BuildIndicesResult(TypedDict):
    status: str
    indices_built: bool


def build_indices(writer: Writer, checkpoint: Callable[[], int]) -> BuildIndicesResult:
    """Bring every derived index in line with the catalog and write it out (idempotent)."""
    with writer.exclusive():
        writer.notify_rebuilt(None)
        checkpoint()
    return BuildIndicesResult(status="ok", indices_built=True)
