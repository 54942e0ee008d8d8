"""A node's projections as the sink of a log follower (ADR 0076): the pages another node
appended are applied through this node's Writer, between its batches, so a followed page and
a local write never interleave, and the derived stores (vectors, BM25) follow both alike."""

from __future__ import annotations

from lcg.commands.writer import Writer
from lcg.domain.ids import GroupId
from lcg.projections.wal.store import RecordedEvent


class FollowedWrites:
    """`lcg.projections.wal.pg_follow.Sink` over a Writer."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer

    def applied(self, group_id: GroupId) -> int:
        return self.writer.applied_position(group_id)

    def apply(self, page: list[RecordedEvent]) -> None:
        self.writer.follow(page)
