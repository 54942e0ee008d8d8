"""The log's port: what the rest of lcg asks of the store that holds the event streams.

docs/adr/0067-the-log-in-postgresql.md. `EventLog` (one SQLite file, ADR 0002) is the first
implementation and `PostgresLog` (lcg.projections.wal.postgres) the second; both keep one
eventsourcing stream per group (stream id `stream_id(group)`, seq = originator_version), the
same codec bytes, and beside the streams the log's identity, pins, marks and checksums.
tests/integration/test_log_store_contract.py runs one contract against both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Protocol

from lcg.domain.events import EventCodec
from lcg.domain.ids import GroupId
from lcg.projections.faults import CorruptEvent
from lcg.projections.wal.marks import Mark
from lcg.projections.wal.store import PAGE_SIZE, RecordedEvent


class LogStore(Protocol):
    """Per-group event streams with optimistic concurrency, and the log's own notes."""

    @property
    def codec(self) -> EventCodec: ...

    @property
    def where(self) -> str:
        """The store as messages name it (a file path, or a URL without its password)."""
        ...

    @property
    def identity(self) -> str:
        """The random identity the log was created with (ADR 0019)."""
        ...

    def close(self) -> None: ...

    def byte_size(self) -> int:
        """Bytes the log takes: the WAL file and its journal, or PostgreSQL's relations."""
        ...

    def groups(self) -> list[GroupId]: ...

    def heads(self) -> dict[GroupId, int]: ...

    def head(self, group_id: str) -> int: ...

    def bounds(self, group_id: str) -> tuple[int, int] | None: ...

    def append(self, batch: Sequence[RecordedEvent]) -> None:
        """All of the batch in one transaction, or nothing (`ConcurrentAppend` when a seq is
        taken, `StorageFailure` when the store fails)."""
        ...

    def read(
        self, group_id: GroupId, *, after: int = 0, upto: int | None = None, page: int = PAGE_SIZE
    ) -> Iterator[list[RecordedEvent]]: ...

    def last_seq_of(self, group_id: str, wire_names: Sequence[str], upto: int) -> int: ...

    def check(self, group_id: GroupId, upto: int, *, seal: bool) -> CorruptEvent | None: ...

    def truncate_all(self) -> None: ...

    def pins(self) -> dict[GroupId, int] | None: ...

    def set_pins(self, pins: dict[GroupId, int | None]) -> None: ...

    def adopt(self, identity: str, generation: int, active: list[Mark]) -> None:
        """Take another log's identity, generation and active marks (a copy of it)."""
        ...

    def generation(self) -> int: ...

    def marks(self, group_id: GroupId) -> list[Mark]: ...

    def create_mark(self, group_id: GroupId, name: str, seq: int, at: datetime) -> Mark: ...

    def delete_mark(self, group_id: GroupId, name: str, at: datetime) -> Mark | None: ...
