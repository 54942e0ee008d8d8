"""Search maintenance: backfill summary embeddings (K-SEM, P-130) and build indices (P-138)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from functools import partial
from typing import NamedTuple, TypedDict

from lcg.commands.read_hold import ReadHold
from lcg.commands.writer import WriteContext, Writer
from lcg.domain import deciders
from lcg.domain.commands import BackfillSummaries
from lcg.domain.ids import EntityUuid
from lcg.projections.graph import state
from lcg.projections.runner import Progress

BATCH = 200  # entities decided and appended per write batch


class BackfillResult(TypedDict):
    group_id: str
    total_entities: int
    backfilled: int
    dry_run: bool


class _Page(NamedTuple):
    entities: int  # entities the page read
    backfilled: int  # of which non-blank summaries, embedded
    last_seq: int | None  # None: no entity after the page's start


def _summaries(page: list[state.EntitySummary]) -> list[tuple[EntityUuid, str]]:
    return [(entity["uuid"], entity["summary"]) for entity in page]


def _backfill_page(ctx: WriteContext, command: BackfillSummaries, after_seq: int) -> _Page:
    """Load one page of the group's entities, decide, append: all inside one write batch."""
    page = state.entity_summaries(ctx.conn, command.group_id, after_seq=after_seq, limit=BATCH)
    events = deciders.decide_backfill_summaries(command, _summaries(page))
    ctx.append(command.group_id, events)
    return _Page(len(page), len(events), page[-1]["seq"] if page else None)


def backfill_summary_embeddings(
    writer: Writer,
    command: BackfillSummaries,
    *,
    dry_run: bool,
    progress: Progress | None = None,
    read_hold: ReadHold | None = None,
) -> BackfillResult:
    """Re-embed every non-blank summary of one group; each is a SummaryEmbedded event.

    A real run holds the writer exclusively for its whole duration (K-SEM-011, ADR 0105):
    every page is its own batch (a run cut short keeps the pages it wrote, K-SEM-017), but
    no other write is applied between two pages; a write issued during the run waits in the
    writer's queue and is applied after the run. It holds `read_hold` as long, so the reads
    that wait for it do too. Progress counts the group's entities read; a dry run decides
    over them all without appending.
    """
    group = command.group_id
    with writer.exclusive():
        conn = writer.runner.conn
        total = state.group_counts(conn, group)["entities"]
        if dry_run:
            entities = state.entity_summaries(conn, group, after_seq=0, limit=total)
            candidates = deciders.decide_backfill_summaries(command, _summaries(entities))
            return BackfillResult(
                group_id=group, total_entities=total, backfilled=len(candidates), dry_run=True
            )
        read, done, after = 0, 0, 0
        with nullcontext() if read_hold is None else read_hold.holding():
            while True:
                handler = partial(_backfill_page, command=command, after_seq=after)
                page = _own_batch(writer, handler)
                if page.last_seq is None:
                    break
                read, done, after = read + page.entities, done + page.backfilled, page.last_seq
                if progress is not None:
                    progress(read, max(total, read))
    return BackfillResult(group_id=group, total_entities=total, backfilled=done, dry_run=False)


def _own_batch(writer: Writer, handler: Callable[[WriteContext], _Page]) -> _Page:
    """The handler in a batch of its own: unlike `Writer.execute`, it runs none of the
    writes other callers queued meanwhile (they wait for the exclusive hold to end)."""
    (result,) = writer.execute_many([handler])
    if isinstance(result, Exception):
        raise result
    return result


class BuildIndicesResult(TypedDict):
    status: str
    indices_built: bool


def build_indices(writer: Writer, checkpoint: Callable[[], int]) -> BuildIndicesResult:
    """Bring every derived index in line with the catalog and write it out (idempotent)."""
    with writer.exclusive():
        writer.notify_rebuilt(None)
        checkpoint()
    return BuildIndicesResult(status="ok", indices_built=True)
